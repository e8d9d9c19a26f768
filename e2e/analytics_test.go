//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// analyticsOf calls GET /api/v1/splats/{id}/analytics with query as eu and returns the answer.
func analyticsOf(t *testing.T, tn tenant, eu, id, query string) map[string]any {
	t.Helper()
	r := do(t, "GET", splatPath(id)+"/analytics"+query, tn.keys(eu), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	return r.Body["analytics"].(map[string]any)
}

// dayCounts maps each day of an analytics answer to its [impressions, uniqueViews].
func dayCounts(a map[string]any) (dates []string, counts map[string][2]int64) {
	counts = map[string][2]int64{}
	for _, d := range a["days"].([]any) {
		m := d.(map[string]any)
		date := m["date"].(string)
		dates = append(dates, date)
		counts[date] = [2]int64{int64(m["impressions"].(float64)), int64(m["uniqueViews"].(float64))}
	}
	return dates, counts
}

// Scene analytics (contract item 16): totals equal the views sent (beacons today, history
// written straight into ClickHouse), a visitor seen on two days counts once in the window's
// uniqueViews, every day of the window is listed (zeros included, today last), the window
// bounds which days count, and the route is scoped like GET scene.
func TestSceneAnalyticsCountTheViewsSent(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	quiet := publicScene(t, tn, "ada")
	now := time.Now().UTC()
	twoDaysAgo := now.AddDate(0, 0, -2)
	insertEvents(t, tn.IntegrationID, id, twoDaysAgo, "v1", "v2")
	insertEvents(t, tn.IntegrationID, id, now.AddDate(0, 0, -10), "v9")
	tok := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": id})
	for _, v := range []string{"v1", "v1", "v3"} {
		view(t, tok, id, v)
	}
	today := now.Format(time.DateOnly)

	var week map[string]any
	require.Eventually(t, func() bool {
		week = analyticsOf(t, tn, "", id, "?window=7")
		totals := week["totals"].(map[string]any)
		return totals["impressions"] == float64(5)
	}, visibleWithin, 100*time.Millisecond, "the beacons reach the analytics within 10 s")
	require.Equal(t, map[string]any{"impressions": float64(5), "uniqueViews": float64(3)}, week["totals"],
		"v1 on two days counts once; the view 10 days ago is outside the window")
	require.Equal(t, id, week["splatId"])
	require.Equal(t, float64(7), week["windowDays"])
	dates, counts := dayCounts(week)
	require.Len(t, dates, 7)
	if dates[6] != today { // the UTC day turned during the test
		today = time.Now().UTC().Format(time.DateOnly)
	}
	require.Equal(t, today, dates[6], "today is last")
	require.Equal(t, dates[0]+"T00:00:00.000Z", week["since"], "since is the first day's UTC midnight")
	require.Equal(t, [2]int64{3, 2}, counts[today])
	require.Equal(t, [2]int64{2, 2}, counts[twoDaysAgo.Format(time.DateOnly)])
	var sum int64
	for _, c := range counts {
		sum += c[0]
	}
	require.Equal(t, int64(5), sum, "the days add up to the total impressions")

	// The default window is 30 days: the view 10 days ago counts.
	month := analyticsOf(t, tn, "", id, "")
	require.Equal(t, float64(30), month["windowDays"])
	require.Equal(t, map[string]any{"impressions": float64(6), "uniqueViews": float64(4)}, month["totals"])
	// splathostctl analytics: the same answer with --json, and a chart of it.
	keys := []string{"--public-key", tn.PublicKey, "--secret-key", tn.SecretKey}
	var cli map[string]any
	ctlJSON(t, &cli, append([]string{"analytics", id, "--window", "7"}, keys...)...)
	require.Equal(t, week["totals"], cli["totals"])
	require.Equal(t, week["days"], cli["days"])
	chart := runCtl(t, append([]string{"analytics", id, "--window", "7", "--customer", "ada"}, keys...)...)
	require.NoError(t, chart.err, "%s", chart.stderr)
	require.Regexp(t, `(?m)^impressions +5  [▁-█]{7}  max 3 on `+today+`$`, string(chart.stdout))
	require.Regexp(t, `(?m)^unique +3  [▁-█]{7}  max 2 on `, string(chart.stdout))
	// A scene the keys cannot see: the CLI reports the API's 404.
	require.EqualValues(t, 404, ctlError(t, append([]string{"analytics", publicScene(t, newTenant(t), "bob"), "--window", "7"}, keys...)...)["status"])

	// A scene with no views has every day at zero.
	none := analyticsOf(t, tn, "ada", quiet, "?window=1")
	require.Equal(t, map[string]any{"impressions": float64(0), "uniqueViews": float64(0)}, none["totals"])
	_, zero := dayCounts(none)
	require.Equal(t, map[string][2]int64{today: {0, 0}}, zero)
}

func TestSceneAnalyticsScopeAndBounds(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	private := newScene(t, tn, "ada", 4)["id"].(string)
	public := publicScene(t, tn, "ada")
	analyticsOf(t, tn, "ada", private, "")
	analyticsOf(t, tn, "", private, "")
	analyticsOf(t, tn, "bob", public, "?window=90")
	// Another customer's private scene, another integration's scene, an absent one: 404 alike.
	requireEnvelope(t, do(t, "GET", splatPath(private)+"/analytics", tn.keys("bob"), nil), 404)
	other := newTenant(t)
	requireEnvelope(t, do(t, "GET", splatPath(private)+"/analytics", other.keys(""), nil), 404)
	requireEnvelope(t, do(t, "GET", splatPath("0123456789abcdef01234567")+"/analytics", tn.keys(""), nil), 404)
	for _, q := range []string{"?window=0", "?window=91", "?window=x", "?window=", "?window=1.5", "?window=-3"} {
		requireEnvelope(t, do(t, "GET", splatPath(public)+"/analytics"+q, tn.keys(""), nil), 400)
	}
	requireEnvelope(t, do(t, "GET", splatPath(public)+"/analytics", nil, nil), 401)
}
