//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// guideQuery is one ```sql block of docs/guides/analytics.md: its name (the word after sql),
// whether it is the 25.8-only form, and its text.
type guideQuery struct {
	name  string
	v258  bool
	query string
}

// guideQueries reads the SQL blocks of the analytics guide, so the test runs what the guide
// shows and the two cannot drift apart.
func guideQueries(t *testing.T) map[string]guideQuery {
	t.Helper()
	raw, err := os.ReadFile("../docs/guides/analytics.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?ms)^```sql([^\n]*)\n(.*?)^```$").FindAllStringSubmatch(string(raw), -1)
	out := map[string]guideQuery{}
	for _, b := range blocks {
		info := strings.Fields(b[1])
		q := guideQuery{query: strings.TrimSpace(b[2])}
		if len(info) > 0 && info[0] == "25.8" {
			q.v258, info = true, info[1:]
		}
		require.Len(t, info, 1, "every sql block of the guide is named for this test: %q", b[0])
		q.name = info[0]
		key := q.name
		if q.v258 {
			key += "@25.8"
		}
		require.NotContains(t, out, key, "block names are unique")
		out[key] = q
	}
	return out
}

// chRows runs query on the dev ClickHouse over HTTP (as an analyst's curl would) in the
// analytics database and returns its rows by column name.
func chRows(t *testing.T, query string) []map[string]string {
	t.Helper()
	u := env.State.ClickHouseHTTPURL + "/?database=" + url.QueryEscape(env.Config.ClickHouseDB)
	resp, err := http.Post(u, "text/plain", strings.NewReader(query+"\nFORMAT TabSeparatedWithNames"))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, "%s\n%s", query, body)
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	cols := strings.Split(lines[0], "\t")
	var out []map[string]string
	for _, l := range lines[1:] {
		vals := strings.Split(l, "\t")
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i]
		}
		out = append(out, row)
	}
	return out
}

// pick reduces rows to the named columns, joined by "|", in the rows' order.
func pick(rows []map[string]string, cols ...string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		vals := make([]string, len(cols))
		for j, c := range cols {
			vals[j] = r[c]
		}
		out[i] = strings.Join(vals, "|")
	}
	return out
}

// TestAnalyticsGuideQueries runs every query of docs/guides/analytics.md on the dev ClickHouse
// against views sent through the view beacon (and earlier days' views written through the
// streamer's insert, as TestSceneAnalyticsCountTheViewsSent does), and checks the answers: top
// N per integration with LIMIT n BY, unique viewers per day, a scene's audience retention, and
// the names synced from Postgres, which follow a rename and leave with a deletion, and never
// cross integrations.
func TestAnalyticsGuideQueries(t *testing.T) {
	t.Parallel()
	qs := guideQueries(t)
	a, b := newTenant(t), newTenant(t)
	titles := map[string]string{}
	scene := func(tn tenant, title string) string {
		id := publicScene(t, tn, "ada")
		patchSplat(t, tn, "ada", id, map[string]any{"title": title})
		titles[id] = title
		return id
	}
	s1, s2, s3, s4 := scene(a, "Atrium"), scene(a, "Bridge"), scene(a, "Cellar"), scene(a, "Dome")
	t1 := scene(b, "Elsewhere")
	today := chRows(t, "SELECT today() AS d")[0]["d"]
	day := func(back int) string {
		d, err := time.Parse(time.DateOnly, today)
		require.NoError(t, err)
		return d.AddDate(0, 0, -back).Format(time.DateOnly)
	}
	at := func(back int) time.Time {
		d, _ := time.Parse(time.DateOnly, day(back))
		return d.Add(12 * time.Hour)
	}
	// Earlier days, then today's views through the beacon.
	insertEvents(t, a.IntegrationID, s1, at(1), "a", "x")
	insertEvents(t, a.IntegrationID, s2, at(2), "a")
	sent := map[string][]string{s1: {"a", "a", "b", "c"}, s2: {"a", "d"}, s3: {"e", "f"}, s4: {"g"}, t1: {"z"}}
	for id, visitors := range sent {
		tn := a
		if id == t1 {
			tn = b
		}
		tok := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": id})
		for _, v := range visitors {
			view(t, tok, id, v)
		}
	}
	run := func(name, integrationID, sceneID string) []map[string]string {
		t.Helper()
		q, ok := qs[name]
		require.True(t, ok, "the guide has the %s query", name)
		sql := strings.NewReplacer("'<integration id>'", "'"+integrationID+"'", "'<scene id>'", "'"+sceneID+"'",
			"database = 'splathost'", "database = '"+env.Config.ClickHouseDB+"'").Replace(q.query)
		return chRows(t, sql)
	}
	ran := map[string]bool{}
	check := func(name, integrationID, sceneID string, cols []string, want []string) {
		t.Helper()
		ran[name] = true
		var got []string
		eventually(t, name, func() bool {
			got = pick(run(name, integrationID, sceneID), cols...)
			return fmt.Sprint(got) == fmt.Sprint(want)
		}, func() string { return fmt.Sprint(got) })
	}
	// The names arrive with the scenes' commits and title changes: wait for all of them first.
	check("names-week", a.IntegrationID, "", []string{"scene_id", "title", "impressions"},
		[]string{s1 + "|Atrium|6", s2 + "|Bridge|3", s3 + "|Cellar|2", s4 + "|Dome|1"})
	check("names-week", b.IntegrationID, "", []string{"scene_id", "title", "impressions"}, []string{t1 + "|Elsewhere|1"})

	// Top 3 per integration: the guide's query over every integration, kept to this test's two.
	topOfOurs := func() []string {
		rows := run("top-per-integration", "", "")
		var ours []map[string]string
		for _, r := range rows {
			if r["integration_id"] == a.IntegrationID || r["integration_id"] == b.IntegrationID {
				ours = append(ours, r)
			}
		}
		return pick(ours, "integration_id", "product_slug", "scene_id", "title", "unique_views", "impressions", "score")
	}
	ran["top-per-integration"] = true
	// awaitTop waits for a's three best rows (scene|title|unique|impressions|score) and b's one,
	// integrations in id order.
	awaitTop := func(what string, best ...string) {
		t.Helper()
		var want, top []string
		for _, r := range best {
			want = append(want, a.IntegrationID+"|"+a.ProductSlug+"|"+r)
		}
		other := b.IntegrationID + "|" + b.ProductSlug + "|" + t1 + "|Elsewhere|1|1|4"
		if a.IntegrationID < b.IntegrationID {
			want = append(want, other)
		} else {
			want = append([]string{other}, want...)
		}
		eventually(t, what, func() bool { top = topOfOurs(); return fmt.Sprint(top) == fmt.Sprint(want) },
			func() string { return fmt.Sprint(top) })
	}
	awaitTop("top per integration", s1+"|Atrium|4|6|18", s2+"|Bridge|2|3|9", s3+"|Cellar|2|2|8")

	check("trending-scores", a.IntegrationID, "", []string{"scene_id", "score"},
		[]string{s1 + "|18", s2 + "|9", s3 + "|8", s4 + "|4"})
	check("viewers-per-day", a.IntegrationID, "", []string{"day", "unique_viewers", "impressions"},
		[]string{day(2) + "|1|1", day(1) + "|2|2", day(0) + "|7|9"})
	check("scene-per-day", a.IntegrationID, s1, []string{"day", "unique_views", "impressions"},
		[]string{day(1) + "|2|2", day(0) + "|3|4"})
	// Retention of s1's audience: a and x first came yesterday, a came back today; b and c are new today.
	check("scene-retention", a.IntegrationID, s1, []string{"first_day", "viewers", "back_next_day", "back_later"},
		[]string{day(1) + "|2|1|1", day(0) + "|2|0|0"})
	// Visitor a was seen today, yesterday and two days ago: returning when two of those days are
	// in this month.
	returning := "0"
	if day(1)[:7] == today[:7] {
		returning = "1"
	}
	check("returning-month", a.IntegrationID, "", []string{"returning"}, []string{returning})
	ran["hourly-today"] = true
	var impressions int
	for _, r := range run("hourly-today", a.IntegrationID, "") {
		var n int
		_, err := fmt.Sscan(r["impressions"], &n)
		require.NoError(t, err)
		impressions += n
	}
	require.Equal(t, 9, impressions, "today's hours hold today's beacons")
	ran["partitions"] = true
	require.Contains(t, pick(run("partitions", "", ""), "table", "partition"), "view_events|"+strings.ReplaceAll(today[:7], "-", ""))

	// A rename reaches the names; a deletion takes the scene's name and views out of every query;
	// the other integration's names never show under this one's id.
	patchSplat(t, a, "ada", s1, map[string]any{"title": "Atrium, renamed"})
	r := do(t, "DELETE", splatPath(s3), a.keys("ada"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	check("names-week", a.IntegrationID, "", []string{"scene_id", "title", "impressions"},
		[]string{s1 + "|Atrium, renamed|6", s2 + "|Bridge|3", s4 + "|Dome|1"})
	awaitTop("top per integration after the deletion", s1+"|Atrium, renamed|4|6|18", s2+"|Bridge|2|3|9", s4+"|Dome|1|1|4")
	names := chRows(t, "SELECT integration_id, scene_id, title FROM scene_names_visible WHERE integration_id IN ('"+
		a.IntegrationID+"', '"+b.IntegrationID+"') OR scene_id = '"+s3+"' ORDER BY title")
	require.Equal(t, []string{
		a.IntegrationID + "|" + s1 + "|Atrium, renamed", a.IntegrationID + "|" + s2 + "|Bridge",
		a.IntegrationID + "|" + s4 + "|Dome", b.IntegrationID + "|" + t1 + "|Elsewhere",
	}, pick(names, "integration_id", "scene_id", "title"), "the deleted scene's name is gone; each name under its own integration")

	// Every block of the guide was run and checked, but the 25.8-only forms: the dev
	// ClickHouse is 18.16, which has no window functions.
	var skipped []string
	for key, q := range qs {
		if q.v258 {
			require.Contains(t, qs, q.name, "a 25.8 form has its 18.16 form")
			skipped = append(skipped, key)
			continue
		}
		require.True(t, ran[key], "the guide's %s query is checked here", key)
	}
	sort.Strings(skipped)
	t.Logf("not run on ClickHouse 18.16: %v", skipped)
}
