//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
)

// visibleWithin is the contract's bound (item 4) for a view to show in viewCount and trending.
const visibleWithin = 10 * time.Second

// eventuallyWait is the generous deadline of polls that wait on background work (a streamer
// retrying after an outage, a ClickHouse mutation) on a shared two-core machine.
const eventuallyWait = 90 * time.Second

// publicScene commits a public, embeddable scene for eu and returns its id.
func publicScene(t *testing.T, tn tenant, eu string) string {
	t.Helper()
	id := newScene(t, tn, eu, 4)["id"].(string)
	patchSplat(t, tn, eu, id, map[string]any{"visibility": "public"})
	return id
}

// view posts one view beacon and requires 202.
func view(t *testing.T, token, splatID, visitor string) {
	t.Helper()
	r := do(t, "POST", "/api/embed/views", sessionHeaders(token), map[string]any{"splatId": splatID, "visitorId": visitor})
	require.Equal(t, 202, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"status": "accepted"}, r.Body)
}

// viewCount is a scene's viewCount through the REST API.
func viewCount(t *testing.T, tn tenant, id string) int64 {
	t.Helper()
	r := do(t, "GET", splatPath(id), tn.keys(""), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	return int64(splatOf(r)["viewCount"].(float64))
}

// chCount counts a scene's stored view events: every row, and distinct event ids.
func chCount(t *testing.T, sceneID string) (rows, distinct uint64) {
	t.Helper()
	row := env.Process.CH.QueryRow(context.Background(), "SELECT count(), uniqExact(event_id) FROM "+
		env.Config.ClickHouseDB+"."+analytics.EventsTable+" WHERE scene_id = ?", sceneID)
	require.NoError(t, row.Scan(&rows, &distinct))
	return rows, distinct
}

// syntheticID gives ClickHouse-only test events ids far above any outbox id.
var syntheticID atomic.Int64

func init() { syntheticID.Store(1<<50 + rand.Int64N(1<<40)) }

// insertEvents writes view events straight into ClickHouse at the given times (history the
// beacon cannot produce: views days or months ago).
func insertEvents(t *testing.T, integrationID, sceneID string, at time.Time, visitors ...string) {
	t.Helper()
	events := make([]analytics.Event, len(visitors))
	for i, v := range visitors {
		events[i] = analytics.Event{ID: syntheticID.Add(1), IntegrationID: integrationID, SceneID: sceneID, VisitorID: v, ViewedAt: at}
	}
	_, err := env.Process.Views.Insert(context.Background(), events, false)
	require.NoError(t, err)
}

// trending calls GET /api/v1/splats/trending with query and returns the response, once the
// standby that serves trending's reads (cluster shape) has what the test wrote before.
func trendingOf(t *testing.T, tn tenant, query string) map[string]any {
	t.Helper()
	awaitStandby(t)
	r := do(t, "GET", "/api/v1/splats/trending"+query, tn.keys(""), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	return r.Body
}

// trendingIDs returns the ranked ids with their source and score.
func trendingIDs(body map[string]any) (ids, sources []string, scores []int64) {
	for _, it := range body["splats"].([]any) {
		m := it.(map[string]any)
		tr := m["trending"].(map[string]any)
		ids = append(ids, m["id"].(string))
		sources = append(sources, tr["source"].(string))
		scores = append(scores, int64(tr["score"].(float64)))
	}
	return ids, sources, scores
}

func TestViewBeaconCountsAndTrendsWithinTenSeconds(t *testing.T) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	tok := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": id})
	start := time.Now()
	view(t, tok, id, "visitor-1")
	view(t, tok, id, "visitor-1")
	view(t, tok, id, "visitor-2")
	require.Eventually(t, func() bool { return viewCount(t, tn, id) == 3 }, visibleWithin, 100*time.Millisecond,
		"viewCount reflects the views within 10 s")
	require.Eventually(t, func() bool {
		ids, sources, scores := trendingIDs(trendingOf(t, tn, ""))
		return len(ids) == 1 && ids[0] == id && sources[0] == "window" && scores[0] == 2*3+3
	}, visibleWithin-time.Since(start), 100*time.Millisecond, "trending reflects the views within 10 s")
	it := trendingOf(t, tn, "")["splats"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"source": "window", "score": float64(9), "impressions": float64(3), "uniqueViews": float64(2)}, it["trending"])
	requireItemShape(t, it)
	rows, distinct := chCount(t, id)
	require.Equal(t, uint64(3), rows)
	require.Equal(t, uint64(3), distinct)
}

func TestViewBeaconRules(t *testing.T) {
	tn := newTenant(t)
	public := publicScene(t, tn, "ada")
	other := publicScene(t, tn, "ada")
	private := newScene(t, tn, "bob", 4)["id"].(string)
	guest := mintToken(t, tn, "", map[string]any{"type": "viewer"})
	pinned := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": public})
	bob := mintToken(t, tn, "bob", map[string]any{"type": "viewer"})

	for name, body := range map[string]any{
		"invalid JSON":       `{"splatId":`,
		"no splat id":        map[string]any{"visitorId": "v"},
		"no visitor":         map[string]any{"splatId": public},
		"bad splat id":       map[string]any{"splatId": "nope", "visitorId": "v"},
		"empty visitor":      map[string]any{"splatId": public, "visitorId": ""},
		"long visitor":       map[string]any{"splatId": public, "visitorId": fmt.Sprintf("%0129d", 1)},
		"visitor not string": map[string]any{"splatId": public, "visitorId": 5},
		"unknown field":      map[string]any{"splatId": public, "visitorId": "v", "extra": 1},
	} {
		t.Run(name, func(t *testing.T) {
			requireEnvelope(t, do(t, "POST", "/api/embed/views", sessionHeaders(guest), body), 400)
		})
	}
	// Scenes the session may not see: 404, nothing recorded.
	requireEnvelope(t, do(t, "POST", "/api/embed/views", sessionHeaders(guest), map[string]any{"splatId": private, "visitorId": "v"}), 404)
	requireEnvelope(t, do(t, "POST", "/api/embed/views", sessionHeaders(pinned), map[string]any{"splatId": other, "visitorId": "v"}), 404)
	requireEnvelope(t, do(t, "POST", "/api/embed/views", sessionHeaders(guest), map[string]any{"splatId": "0123456789abcdef01234567", "visitorId": "v"}), 404)
	// No session: 401; the integrator's keys are not a session.
	requireEnvelope(t, do(t, "POST", "/api/embed/views", nil, map[string]any{"splatId": public, "visitorId": "v"}), 401)
	requireEnvelope(t, do(t, "POST", "/api/embed/views", tn.keys(""), map[string]any{"splatId": public, "visitorId": "v"}), 401)
	// The owner's own private scene counts its views.
	view(t, bob, private, "bob-browser")
	require.Eventually(t, func() bool { return viewCount(t, tn, private) == 1 }, visibleWithin, 100*time.Millisecond)
}

// likeScenes is a tenant with a public scene (id), a public one whose owner turned reactions
// off, bob's private scene and a guest viewer session.
type likeScenes struct {
	tn                       tenant
	id, noReactions, private string
	tok                      string
}

func newLikeScenes(t *testing.T) likeScenes {
	t.Helper()
	tn := newTenant(t)
	l := likeScenes{tn: tn, id: publicScene(t, tn, "ada"), noReactions: publicScene(t, tn, "ada")}
	patchSplat(t, tn, "ada", l.noReactions, map[string]any{"allowReactions": false})
	l.private = newScene(t, tn, "bob", 4)["id"].(string)
	l.tok = mintToken(t, tn, "", map[string]any{"type": "viewer"})
	return l
}

// react sends a like (POST) or an unlike (DELETE) with tok and returns its 200 answer.
func react(t *testing.T, method, tok, id, visitor string) map[string]any {
	t.Helper()
	r := do(t, method, "/api/embed/splats/"+id+"/like", sessionHeaders(tok), map[string]any{"visitorId": visitor})
	require.Equal(t, 200, r.Status, string(r.Raw))
	return r.Body
}

func TestLikesOnePerVisitor(t *testing.T) {
	l := newLikeScenes(t)
	tn, id, noReactions, private, tok := l.tn, l.id, l.noReactions, l.private, l.tok
	like := func(id, visitor string) map[string]any { return react(t, "POST", tok, id, visitor) }
	require.Equal(t, float64(1), like(id, "v1")["likeCount"])
	require.Equal(t, float64(1), like(id, "v1")["likeCount"], "a second like by the same visitor changes nothing")
	require.Equal(t, float64(2), like(id, "v2")["likeCount"])
	r := do(t, "GET", splatPath(id), tn.keys(""), nil)
	require.Equal(t, float64(2), splatOf(r)["likeCount"])
	requireEnvelope(t, do(t, "POST", "/api/embed/splats/"+noReactions+"/like", sessionHeaders(tok), map[string]any{"visitorId": "v1"}), 403)
	requireEnvelope(t, do(t, "POST", "/api/embed/splats/"+private+"/like", sessionHeaders(tok), map[string]any{"visitorId": "v1"}), 404)
	requireEnvelope(t, do(t, "POST", "/api/embed/splats/"+id+"/like", sessionHeaders(tok), map[string]any{}), 400)
}

// TestUnlikeWithdrawsOneVisitorsLike: DELETE .../like removes the visitor's own like once (a
// repeat or a visitor who never liked changes nothing), never takes likeCount below 0, and is
// scoped like like: 403 where reactions are off, 404 where the session may not see the scene.
func TestUnlikeWithdrawsOneVisitorsLike(t *testing.T) {
	l := newLikeScenes(t)
	tn, id, noReactions, private, tok := l.tn, l.id, l.noReactions, l.private, l.tok
	bob := mintToken(t, tn, "bob", map[string]any{"type": "viewer"})
	call := func(method, tok, id, visitor string) map[string]any { return react(t, method, tok, id, visitor) }
	call("POST", tok, id, "v1")
	call("POST", tok, id, "v2")
	u := call("DELETE", tok, id, "v1")
	require.Equal(t, map[string]any{"status": "success", "liked": false, "removed": true, "likeCount": float64(1)}, u)
	u = call("DELETE", tok, id, "v1")
	require.Equal(t, false, u["removed"], "a second unlike changes nothing")
	require.Equal(t, float64(1), u["likeCount"])
	require.Equal(t, false, call("DELETE", tok, id, "never-liked")["removed"])
	require.Equal(t, float64(1), splatOf(do(t, "GET", splatPath(id), tn.keys(""), nil))["likeCount"])
	require.Equal(t, float64(2), call("POST", tok, id, "v1")["likeCount"], "a visitor may like again")
	require.Equal(t, float64(1), call("DELETE", tok, id, "v2")["likeCount"])
	require.Equal(t, float64(0), call("DELETE", tok, id, "v1")["likeCount"])

	// A count that drifted below its like rows (an operator's repair) stays at 0.
	call("POST", tok, id, "v3")
	updateScene(t, id, `like_count = 0`)
	u = call("DELETE", tok, id, "v3")
	require.Equal(t, true, u["removed"])
	require.Equal(t, float64(0), u["likeCount"])
	require.Equal(t, float64(0), splatOf(do(t, "GET", splatPath(id), tn.keys(""), nil))["likeCount"])

	// The owner's own private scene: their session may like and unlike it; a guest may not see it.
	call("POST", bob, private, "b1")
	require.Equal(t, float64(0), call("DELETE", bob, private, "b1")["likeCount"])
	requireEnvelope(t, do(t, "DELETE", "/api/embed/splats/"+private+"/like", sessionHeaders(tok), map[string]any{"visitorId": "b1"}), 404)
	requireEnvelope(t, do(t, "DELETE", "/api/embed/splats/"+noReactions+"/like", sessionHeaders(tok), map[string]any{"visitorId": "v1"}), 403)
	requireEnvelope(t, do(t, "DELETE", "/api/embed/splats/"+id+"/like", sessionHeaders(tok), map[string]any{}), 400)
	requireEnvelope(t, do(t, "DELETE", "/api/embed/splats/"+id+"/like", nil, map[string]any{"visitorId": "v1"}), 401)
	requireEnvelope(t, do(t, "DELETE", "/api/embed/splats/not-an-id/like", sessionHeaders(tok), map[string]any{"visitorId": "v1"}), 404)
}

func TestTrendingRanksTiesEligibilityAndBackfill(t *testing.T) {
	tn := newTenant(t)
	other := newTenant(t)
	now := time.Now().UTC()
	mk := func() string { return publicScene(t, tn, "ada") }
	a, b, c, d := mk(), mk(), mk(), mk()
	private := newScene(t, tn, "ada", 4)["id"].(string)
	noEmbed := mk()
	patchSplat(t, tn, "ada", noEmbed, map[string]any{"allowEmbed": false})
	archived := mk()
	backfillHigh, backfillLow := mk(), mk()
	foreign := publicScene(t, other, "zed")

	// a: 2 unique + 2 impressions = 8; b and c: 1 unique + 5 impressions = 8 too; d: 4.
	insertEvents(t, tn.IntegrationID, a, now.Add(-time.Hour), "v1", "v2")
	insertEvents(t, tn.IntegrationID, b, now.Add(-2*time.Hour), "v1", "v1", "v1", "v1", "v1")
	insertEvents(t, tn.IntegrationID, c, now.Add(-2*time.Hour), "v1", "v1", "v1", "v1", "v1")
	insertEvents(t, tn.IntegrationID, d, now.Add(-3*time.Hour), "v9")
	// Ineligible scenes with far more activity never appear.
	for _, id := range []string{private, noEmbed, archived} {
		insertEvents(t, tn.IntegrationID, id, now.Add(-time.Hour), "x1", "x2", "x3", "x4")
	}
	insertEvents(t, other.IntegrationID, foreign, now.Add(-time.Hour), "x1", "x2", "x3", "x4")
	// Ties on score break on all-time likes, then all-time views.
	updateScene(t, a, `like_count = 1, view_count = 1`)
	updateScene(t, b, `like_count = 5, view_count = 1`)
	updateScene(t, c, `like_count = 5, view_count = 9`)
	updateScene(t, archived, `archived_at = now(), visibility = 'private', allow_embed = false`)
	updateScene(t, backfillHigh, `view_count = 50`)
	updateScene(t, backfillLow, `view_count = 20`)

	body := trendingOf(t, tn, "")
	ids, sources, scores := trendingIDs(body)
	require.Equal(t, []string{c, b, a, d}, ids[:4])
	require.Equal(t, []int64{8, 8, 8, 4}, scores[:4])
	require.Equal(t, []string{"window", "window", "window", "window"}, sources[:4])
	// Backfill: the all-time most viewed eligible scenes, score 0, in view order.
	require.Equal(t, []string{backfillHigh, backfillLow}, ids[4:6])
	for i := 4; i < len(ids); i++ {
		require.Equal(t, "alltime", sources[i])
		require.Zero(t, scores[i])
		require.NotContains(t, []string{private, noEmbed, archived, foreign}, ids[i])
	}
	require.Len(t, ids, 6, "four window items plus the two other eligible scenes")
	tr := body["trending"].(map[string]any)
	require.Equal(t, float64(7), tr["windowDays"])
	require.Equal(t, float64(6), tr["count"])
	require.Equal(t, float64(4), tr["windowCount"])

	// limit cuts the ranked list; no backfill when the window fills it.
	ids, sources, _ = trendingIDs(trendingOf(t, tn, "?limit=2"))
	require.Equal(t, []string{c, b}, ids)
	require.Equal(t, []string{"window", "window"}, sources)
	// A limit that reaches into the backfill.
	ids, sources, _ = trendingIDs(trendingOf(t, tn, "?limit=5"))
	require.Equal(t, []string{c, b, a, d, backfillHigh}, ids)
	require.Equal(t, "alltime", sources[4])

	// isOwner follows the caller's EU.
	r := do(t, "GET", "/api/v1/splats/trending?limit=1", tn.keys("ada"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, true, r.Body["splats"].([]any)[0].(map[string]any)["isOwner"])
}

func TestTrendingWindowStartsAtUTCMidnight(t *testing.T) {
	tn := newTenant(t)
	inside, outside, edge := publicScene(t, tn, "ada"), publicScene(t, tn, "ada"), publicScene(t, tn, "ada")
	for {
		now := time.Now().UTC()
		since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -3)
		insertEvents(t, tn.IntegrationID, edge, since, "at-midnight")                       // first second of the window
		insertEvents(t, tn.IntegrationID, outside, since.Add(-time.Second), "before", "b2") // last second before it
		insertEvents(t, tn.IntegrationID, inside, since.Add(36*time.Hour), "in")
		body := trendingOf(t, tn, "?window=3")
		if after := time.Now().UTC(); after.YearDay() != now.YearDay() {
			continue // the day turned during the test: the window moved; run it again
		}
		tr := body["trending"].(map[string]any)
		require.Equal(t, since.Format("2006-01-02T15:04:05.000Z"), tr["since"])
		require.Equal(t, float64(3), tr["windowDays"])
		ids, sources, _ := trendingIDs(body)
		got := map[string]string{}
		for i, id := range ids {
			got[id] = sources[i]
		}
		require.Equal(t, "window", got[edge], "a view at the window's first second counts")
		require.Equal(t, "window", got[inside])
		require.Equal(t, "alltime", got[outside], "a view a second before the window does not count")
		require.Equal(t, float64(2), tr["windowCount"])
		// A wider window takes the earlier view in.
		ids, sources, _ = trendingIDs(trendingOf(t, tn, "?window=4"))
		got = map[string]string{}
		for i, id := range ids {
			got[id] = sources[i]
		}
		require.Equal(t, "window", got[outside])
		return
	}
}

func TestTrendingBounds(t *testing.T) {
	tn := newTenant(t)
	for _, q := range []string{"window=0", "window=91", "window=1.5", "window=abc", "window=", "window=-1", "window=1e1",
		"limit=0", "limit=101", "limit=2.0", "limit=", "limit=x", "window=7&limit=1000"} {
		t.Run(q, func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "GET", "/api/v1/splats/trending?"+q, tn.keys(""), nil), 400)
			require.NotEmpty(t, issues)
		})
	}
	for _, q := range []string{"window=1", "window=90", "limit=1", "limit=100", "window=90&limit=100", "other=1"} {
		t.Run(q, func(t *testing.T) {
			r := do(t, "GET", "/api/v1/splats/trending?"+q, tn.keys(""), nil)
			require.Equal(t, 200, r.Status, string(r.Raw))
			require.Equal(t, []any{}, r.Body["splats"])
		})
	}
	noRest := newIntegration(t, newAccount(t, "free", 1<<20), map[string]any{"restAccess": false})
	requireEnvelope(t, do(t, "GET", "/api/v1/splats/trending", noRest.keys(""), nil), 403)
	requireEnvelope(t, do(t, "GET", "/api/v1/splats/trending", nil, nil), 401)
}

// viewsThroughOutage posts a view, takes ClickHouse away with down, posts 200 more from 50
// visitors, checks they wait in the Postgres outbox uncounted, brings ClickHouse back with up,
// and requires every accepted view stored and counted exactly once.
func viewsThroughOutage(t *testing.T, down, up func(t *testing.T)) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	tok := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": id})
	view(t, tok, id, "warm")
	require.Eventually(t, func() bool { return viewCount(t, tn, id) == 1 }, visibleWithin, 50*time.Millisecond)

	failures := env.Process.Streamer.Failures()
	down(t)
	const n, visitors = 200, 50
	// One session per visitor, as 50 browsers would have: one session may introduce only a few
	// new visitors a minute.
	toks := viewerSessions(t, tn, id, visitors)
	for i := 0; i < n; i++ {
		view(t, toks[i%visitors], id, fmt.Sprintf("visitor-%d", i%visitors))
	}
	if env.State.Cluster {
		// The cluster shape takes away only the node the product dials first; it dials the
		// next (analytics.Open), whose Distributed tables reach every shard through the other
		// replicas, so the views are stored and counted while the node is down.
		require.Eventually(t, func() bool { return viewCount(t, tn, id) == n+1 }, eventuallyWait, 200*time.Millisecond,
			"one ClickHouse node down is no outage for the views")
	} else {
		// The streamer tries, fails and keeps the views in Postgres.
		require.Eventually(t, func() bool { return env.Process.Streamer.Failures() > failures }, eventuallyWait, 100*time.Millisecond)
		pending, err := analytics.Pending(context.Background(), env.Process.DB.Pool)
		require.NoError(t, err)
		require.Positive(t, pending, "accepted views wait in the outbox while ClickHouse is away")
		require.Equal(t, int64(1), viewCount(t, tn, id), "nothing is counted before it is stored")
	}
	up(t)

	require.Eventually(t, func() bool { return viewCount(t, tn, id) == n+1 }, eventuallyWait, 200*time.Millisecond)
	rows, distinct := chCount(t, id)
	require.Equal(t, uint64(n+1), distinct, "every accepted view is stored")
	require.Equal(t, uint64(n+1), rows, "and none twice")
	ids, _, scores := trendingIDs(trendingOf(t, tn, "?limit=1"))
	require.Equal(t, []string{id}, ids)
	require.Equal(t, int64((visitors+1)*3+n+1), scores[0])
}

// TestViewsSurviveAClickHouseOutage freezes ClickHouse (SIGSTOP: connections hang, inserts time
// out, and a cut-off insert may still land when it resumes) while views arrive, then resumes it.
func TestViewsSurviveAClickHouseOutage(t *testing.T) {
	// The product's node in the cluster shape (clickhouse-1-1).
	pid, err := env.EnginePID(testenv.EngineClickHouse)
	require.NoError(t, err)
	resumed := true
	t.Cleanup(func() {
		if !resumed {
			require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
		}
	})
	viewsThroughOutage(t, func(t *testing.T) {
		require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
		resumed = false
	}, func(t *testing.T) {
		require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
		resumed = true
	})
}

// TestViewsSurviveAClickHouseCrashAndRestart kills ClickHouse (as a crash would) while views
// arrive, then starts it again on the same data; the streamer reconnects on its own.
func TestViewsSurviveAClickHouseCrashAndRestart(t *testing.T) {
	up := true
	t.Cleanup(func() {
		if !up {
			require.NoError(t, env.StartClickHouse(), "the other tests need ClickHouse back")
		}
	})
	viewsThroughOutage(t, func(t *testing.T) {
		require.NoError(t, env.CrashClickHouse())
		up = false
	}, func(t *testing.T) {
		require.NoError(t, env.StartClickHouse())
		up = true
	})
}

// TestDeletingAScenesOrCustomerRemovesItsViews: a scene DELETE (its PurgeAssets workflow) and a
// customer DELETE (DeleteSceneViews) take the scenes' views out of everything that reads them
// as soon as their workflow ends, with one insert and no mutation; the view-retention run then
// removes the rows of every deleted scene in one batch.
func TestDeletingAScenesOrCustomerRemovesItsViews(t *testing.T) {
	tn := newTenant(t)
	keep := publicScene(t, tn, "ada")
	gone := publicScene(t, tn, "ada")
	bobs1, bobs2 := publicScene(t, tn, "bob"), publicScene(t, tn, "bob")
	tok := mintToken(t, tn, "", map[string]any{"type": "viewer"})
	for _, id := range []string{keep, gone, bobs1, bobs2} {
		view(t, tok, id, "v1")
		view(t, tok, id, "v2")
	}
	for _, id := range []string{keep, gone, bobs1, bobs2} {
		require.Eventually(t, func() bool { rows, _ := chCount(t, id); return rows == 2 }, visibleWithin, 100*time.Millisecond)
	}
	require.Equal(t, 200, do(t, "DELETE", splatPath(gone), tn.keys("ada"), nil).Status)
	// The scene DELETE's asset purge (PurgeAssets) removes the view records too.
	var purgeID string
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT id FROM asset_purges WHERE kind = 'scene' AND scene_id = $1`, gone).Scan(&purgeID))
	pid := workflows.AssetPurgeWorkflowID(workflows.AssetPurgeInput{PurgeID: purgeID, Kind: workflows.PurgeKindScene, IntegrationID: tn.IntegrationID})
	ctx, cancel := context.WithTimeout(context.Background(), eventuallyWait)
	defer cancel()
	// The service starts it right after its answer: wait for it to exist and finish.
	require.Eventually(t, func() bool { return env.Process.Temporal.GetWorkflow(ctx, pid, "").Get(ctx, nil) == nil },
		eventuallyWait, 100*time.Millisecond, "the scene DELETE started %s", pid)
	requireHidden(t, tn, gone)
	r := do(t, "DELETE", "/api/v1/external-user", tn.keys("bob"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	wid := workflows.DeleteViewsWorkflowID(workflows.DeleteViewsInput{IntegrationID: tn.IntegrationID, SceneIDs: []string{bobs1, bobs2}})
	require.NoError(t, env.Process.Temporal.GetWorkflow(ctx, wid, "").Get(ctx, nil), "the customer DELETE started %s", wid)
	recordHistory(t, wid, "", "delete_scene_views.json")
	requireHidden(t, tn, bobs1, bobs2)
	require.Equal(t, [2]uint64{2, 2}, visibleCount(t, keep), "other scenes keep theirs")

	// The daily view-retention run removes the rows of every deleted scene, one mutation per
	// table for all of them.
	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, startOptions("view-compaction-test-"+tn.IntegrationID),
		workflows.DropExpiredViews, workflows.ViewRetentionInput{})
	require.NoError(t, err)
	var res workflows.ViewRetentionResult
	require.NoError(t, run.Get(ctx, &res))
	require.GreaterOrEqual(t, res.CompactedScenes, 3)
	for _, id := range []string{gone, bobs1, bobs2} {
		// Each table's mutation runs on its own: wait for both.
		require.Eventually(t, func() bool {
			var daily uint64
			require.NoError(t, env.Process.CH.QueryRow(context.Background(), "SELECT count() FROM "+env.Config.ClickHouseDB+"."+
				analytics.DailyTable+" WHERE scene_id = ?", id).Scan(&daily))
			rows, _ := chCount(t, id)
			return rows == 0 && daily == 0
		}, eventuallyWait, 200*time.Millisecond, "the views and rollup of %s are deleted", id)
		require.Positive(t, mutationsNaming(t, id), "removed by the batch's mutations")
	}
	rows, _ := chCount(t, keep)
	require.Equal(t, uint64(2), rows, "other scenes keep theirs")
	require.Zero(t, mutationsNaming(t, keep))
}

// requireHidden checks, without waiting, that the deleted scenes' views are out of everything
// that reads them (the analysts' views, trending's and the scene analytics' queries) while
// their rows are still stored: the deletion ran no mutation.
func requireHidden(t *testing.T, tn tenant, ids ...string) {
	t.Helper()
	ctx := context.Background()
	awaitDeletedEverywhere(t, ids...)
	since := time.Now().UTC().AddDate(0, 0, -7)
	scores, err := env.Process.Views.WindowScores(ctx, tn.IntegrationID, since)
	require.NoError(t, err)
	for _, id := range ids {
		require.Equal(t, [2]uint64{0, 0}, visibleCount(t, id), "%s: gone from the analysts' views", id)
		for _, s := range scores {
			require.NotEqual(t, id, s.SceneID, "gone from trending's scores")
		}
		days, total, err := env.Process.Views.SceneWindow(ctx, tn.IntegrationID, id, since)
		require.NoError(t, err)
		require.Empty(t, days, "gone from the scene's analytics")
		require.Zero(t, total.Impressions)
		rows, _ := chCount(t, id)
		require.Equal(t, uint64(2), rows, "%s: its rows wait for the batch compaction", id)
		require.Zero(t, mutationsNaming(t, id), "%s: its deletion ran no mutation", id)
	}
}

// awaitDeletedEverywhere waits, in the cluster shape, until every ClickHouse node's copy of
// the deleted scenes lists the ids (replicas fetch the insert's part asynchronously); on one
// server the insert is there when the deletion ends.
func awaitDeletedEverywhere(t *testing.T, ids ...string) {
	t.Helper()
	if !env.State.Cluster {
		return
	}
	ctx := context.Background()
	db := env.State.ClickHouseDB
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	for _, addr := range env.State.ClickHouseAddrs {
		conn, err := analytics.Open(ctx, addr, db)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			var n uint64
			err := conn.QueryRow(ctx, "SELECT uniqExact(scene_id) FROM "+db+"."+analytics.DeletedTable+" WHERE scene_id IN ("+in+")", args...).Scan(&n)
			return err == nil && n == uint64(len(ids))
		}, 10*time.Second, 10*time.Millisecond, "%s has the deleted scenes", addr)
		conn.Close()
	}
}

// visibleCount is a scene's impressions in the analysts' views of the raw events and of the
// daily rollup.
func visibleCount(t *testing.T, sceneID string) [2]uint64 {
	t.Helper()
	var events, daily uint64
	db := env.Config.ClickHouseDB
	require.NoError(t, env.Process.CH.QueryRow(context.Background(), "SELECT count() FROM "+db+"."+analytics.VisibleEventsView+
		" WHERE scene_id = ?", sceneID).Scan(&events))
	require.NoError(t, env.Process.CH.QueryRow(context.Background(), "SELECT toUInt64(countMerge(impressions)) FROM "+db+"."+
		analytics.VisibleDailyView+" WHERE scene_id = ?", sceneID).Scan(&daily))
	return [2]uint64{events, daily}
}

// mutationsNaming counts the ClickHouse mutations of the analytics database whose command names
// the scene (in the cluster shape, those of the node the test's connection reached).
func mutationsNaming(t *testing.T, sceneID string) uint64 {
	t.Helper()
	var n uint64
	require.NoError(t, env.Process.CH.QueryRow(context.Background(), "SELECT count() FROM system.mutations WHERE database = ? AND position(command, ?) > 0",
		env.Config.ClickHouseDB, sceneID).Scan(&n))
	return n
}

// TestViewsFlowWhileMaintenanceConnectionsAreHeld: every connection of the ClickHouse pool that
// purges, the retention job and reads share is held by a query that does not end (as hung
// ALTER … ON CLUSTER statements held them on the cluster, issue 40), and views still reach
// ClickHouse and viewCount within the contract's 10 s: the streamer has connections of its own.
func TestViewsFlowWhileMaintenanceConnectionsAreHeld(t *testing.T) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	tok := mintToken(t, tn, "", map[string]any{"type": "viewer"})
	holdConnections(t, env.Process.CH)
	ctx := context.Background()
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	require.Error(t, env.Process.CH.Ping(short), "the shared pool has no connection to give")
	for _, v := range []string{"v1", "v2", "v3"} {
		view(t, tok, id, v)
	}
	require.Eventually(t, func() bool { return viewCount(t, tn, id) == 3 }, visibleWithin, 100*time.Millisecond)
	ch, err := analytics.Open(ctx, env.Config.ClickHouseAddr, env.Config.ClickHouseDB)
	require.NoError(t, err)
	defer ch.Close()
	var rows uint64
	require.NoError(t, ch.QueryRow(ctx, "SELECT count() FROM "+env.Config.ClickHouseDB+"."+analytics.EventsTable+" WHERE scene_id = ?", id).Scan(&rows))
	require.Equal(t, uint64(3), rows)
	short, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	require.Error(t, env.Process.CH.Ping(short), "the shared pool was held all along")
}

// holdConnections takes every connection of conn's pool with a query that runs until the test
// ends (one row a second, at no cost to the server), as a hung DDL or mutation would.
func holdConnections(t *testing.T, conn driver.Conn) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	qctx := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"max_block_size": 1}))
	var held []driver.Rows
	t.Cleanup(func() {
		cancel()
		for _, r := range held {
			_ = r.Close()
		}
	})
	for range conn.Stats().MaxOpenConns {
		rows, err := conn.Query(qctx, "SELECT sleepEachRow(1) FROM system.numbers")
		require.NoError(t, err)
		held = append(held, rows)
	}
}

// TestViewRetentionDropsOnlyPartitionsOlderThan400Days runs the view-retention schedule's
// workflow: expired months go, a month partly inside the 400 days stays, and the records of a
// scene deleted without its DeleteSceneViews workflow are swept.
func TestViewRetentionDropsOnlyPartitionsOlderThan400Days(t *testing.T) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	now := time.Now().UTC()
	cutoff := now.AddDate(0, 0, -workflows.ViewRetentionDays)
	cutoffMonth := time.Date(cutoff.Year(), cutoff.Month(), 1, 0, 0, 0, 0, time.UTC)
	expired := cutoffMonth.AddDate(0, -1, 14) // its whole month is before the cutoff
	straddling := cutoffMonth.Add(time.Hour)  // older than 400 days, but its month is not
	recent := now.AddDate(0, 0, -1)
	insertEvents(t, tn.IntegrationID, id, expired, "old")
	insertEvents(t, tn.IntegrationID, id, straddling, "edge")
	insertEvents(t, tn.IntegrationID, id, recent, "new")
	// Records of a scene that no longer exists (its deletion's workflow never ran) are swept.
	deleted := publicScene(t, tn, "ada")
	insertEvents(t, tn.IntegrationID, deleted, recent, "gone")
	exec(t, `DELETE FROM scenes WHERE id = $1`, deleted)

	ctx, cancel := context.WithTimeout(context.Background(), eventuallyWait)
	defer cancel()
	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, startOptions("view-retention-test-"+tn.IntegrationID),
		workflows.DropExpiredViews, workflows.ViewRetentionInput{})
	require.NoError(t, err)
	var res workflows.ViewRetentionResult
	require.NoError(t, run.Get(ctx, &res))
	recordHistory(t, run.GetID(), "", "drop_expired_views_compact.json")
	month := expired.Format("200601")
	require.Contains(t, res.Dropped, analytics.EventsTable+":"+month)
	require.Contains(t, res.Dropped, analytics.DailyTable+":"+month)
	for _, p := range res.Dropped {
		require.NotContains(t, p, straddling.Format("200601"))
		require.NotContains(t, p, recent.Format("200601"))
	}
	var visitors []string
	rows, err := env.Process.CH.Query(context.Background(), "SELECT visitor_id FROM "+env.Config.ClickHouseDB+"."+
		analytics.EventsTable+" WHERE scene_id = ? ORDER BY viewed_at", id)
	require.NoError(t, err)
	for rows.Next() {
		var v string
		require.NoError(t, rows.Scan(&v))
		visitors = append(visitors, v)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"edge", "new"}, visitors)
	require.Positive(t, res.OrphanScenes)
	eventually(t, "the compaction of deleted scenes' views", func() bool { rows, _ := chCount(t, deleted); return rows == 0 }, mutationMark)
}

// mutationMark is the progress of ClickHouse's mutations (an ALTER … DELETE rewrites parts in
// the background): how many are unfinished and how many parts they still have to rewrite.
func mutationMark() string {
	var open, parts string
	if err := env.Process.CH.QueryRow(context.Background(), "SELECT toString(count()), toString(sum(parts_to_do)) FROM system.mutations"+
		" WHERE database = ? AND is_done = 0", env.Config.ClickHouseDB).Scan(&open, &parts); err != nil {
		return err.Error()
	}
	return "mutations open=" + open + " parts to do=" + parts
}

// startOptions starts a workflow on the product's task queue.
func startOptions(id string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{ID: id, TaskQueue: env.Config.TaskQueue}
}
