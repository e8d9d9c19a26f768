//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/analytics"
)

// TestTrendingReadsThePrecomputedWindowAndKeepsItFresh: once a window was asked for, the
// streamer's leader precomputes it (the same numbers as ranking it afresh), trending answers
// from it, and views accepted afterwards still reach trending within the contract's 10 s.
func TestTrendingReadsThePrecomputedWindowAndKeepsItFresh(t *testing.T) {
	ctx := context.Background()
	tn := newTenant(t)
	a, b, quiet := publicScene(t, tn, "ada"), publicScene(t, tn, "ada"), publicScene(t, tn, "ada")
	now := time.Now().UTC()
	insertEvents(t, tn.IntegrationID, a, now.Add(-26*time.Hour), "v1", "v2", "v1")
	insertEvents(t, tn.IntegrationID, a, now.Add(-time.Hour), "v1", "v3")
	insertEvents(t, tn.IntegrationID, b, now.Add(-3*24*time.Hour), "v1")
	insertEvents(t, tn.IntegrationID, b, now.Add(-9*24*time.Hour), "old") // outside the 7-day window

	// The first request ranks the window itself and announces it.
	ids, sources, scores := trendingIDs(trendingOf(t, tn, "?window=7"))
	require.Equal(t, []string{a, b, quiet}, ids)
	require.Equal(t, []string{"window", "window", "alltime"}, sources)
	require.Equal(t, []int64{3*3 + 5, 1*3 + 1, 0}, scores, "a: v1, v2, v3 over five views; b: one view in the window")

	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -7)
	var pre []analytics.Score
	require.Eventually(t, func() bool {
		got, complete, age, ok, err := env.Process.Views.Precomputed(ctx, tn.IntegrationID, since, 0)
		require.NoError(t, err)
		require.True(t, complete)
		pre = got
		return ok && age <= 5*time.Second
	}, visibleWithin, 100*time.Millisecond, "the leader precomputes the window asked for")
	fresh, err := env.Process.Views.WindowScores(ctx, tn.IntegrationID, since)
	require.NoError(t, err)
	require.Equal(t, fresh, pre, "precomputed = ranked afresh")
	require.Equal(t, []analytics.Score{{SceneID: a, UniqueViews: 3, Impressions: 5}, {SceneID: b, UniqueViews: 1, Impressions: 1}}, pre)
	// The top list (what a request reads) holds the same, best first, and knows it is all.
	require.Eventually(t, func() bool {
		top, complete, age, ok, err := env.Process.Views.Precomputed(ctx, tn.IntegrationID, since, 12)
		require.NoError(t, err)
		return ok && complete && age <= 5*time.Second && assert.ObjectsAreEqual(fresh, top)
	}, visibleWithin, 100*time.Millisecond, "the leader writes the window's top list")

	// Trending answers from the top list: a list written there (as a refresh would, but an hour
	// ahead, so the refreshes do not replace it) is what the next request ranks; removed below.
	db := env.Config.ClickHouseDB
	forgeTop := func(ids []string, unique, impressions []uint64, complete uint8) {
		// Synchronous through a Distributed table (the cluster shape), so the next read sees it.
		sync := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_distributed_sync": 1}))
		require.NoError(t, env.Process.CH.Exec(sync, "INSERT INTO "+db+"."+analytics.TopsTable+
			" (integration_id, since, computed_at, complete, scene_ids, unique_views, impressions) SELECT ?, toDate(?), now() + 3600, toUInt8(?), ?, ?, ?",
			tn.IntegrationID, since.Format(time.DateOnly), complete, ids, unique, impressions))
	}
	unforge := func() {
		// A mutation addresses the table holding the rows: in the cluster shape the replicated
		// _local table on every node, not the Distributed one.
		table := db + "." + analytics.TopsTable
		if c := env.State.ClickHouseCluster; c != "" {
			table += analytics.LocalSuffix + " ON CLUSTER " + c
		}
		require.NoError(t, env.Process.CH.Exec(ctx, "ALTER TABLE "+table+" DELETE WHERE integration_id = ? AND computed_at > now() + 60",
			tn.IntegrationID))
		require.Eventually(t, func() bool {
			var n uint64
			require.NoError(t, env.Process.CH.QueryRow(ctx, "SELECT count() FROM "+db+"."+analytics.TopsTable+
				" WHERE integration_id = ? AND computed_at > now() + 60", tn.IntegrationID).Scan(&n))
			return n == 0
		}, visibleWithin, 100*time.Millisecond, "the forged top lists are deleted")
	}
	forgeTop([]string{quiet, a, b}, []uint64{10, 3, 1}, []uint64{10, 5, 1}, 1)
	require.Eventually(t, func() bool {
		ids, sources, scores := trendingIDs(trendingOf(t, tn, "?window=7"))
		return ids[0] == quiet && sources[0] == "window" && scores[0] == 40
	}, visibleWithin, 100*time.Millisecond, "the request reads the top list")
	unforge()

	// A request reads only the best few hundred scenes of the window; when those do not settle
	// the ranking (here 400 scenes that do not exist, so none eligible, outrank every real one,
	// and the list says the window holds more) it reads the whole window from ScoresTable.
	fakes := make([]string, analytics.TopKept)
	fakeUnique, fakeImpressions := make([]uint64, len(fakes)), make([]uint64, len(fakes))
	for i := range fakes {
		fakes[i], fakeImpressions[i] = fmt.Sprintf("fffffffffffffffff%07d", 1000000+i), 1000
	}
	forgeTop(fakes, fakeUnique, fakeImpressions, 0)
	top, complete, _, _, err := env.Process.Views.Precomputed(ctx, tn.IntegrationID, since, analytics.TopKept)
	require.NoError(t, err)
	require.Len(t, top, analytics.TopKept)
	require.False(t, complete)
	require.NotContains(t, []string{top[0].SceneID, top[analytics.TopKept-1].SceneID}, a)
	time.Sleep(2 * time.Second) // the process's cached window expires
	ids, sources, scores = trendingIDs(trendingOf(t, tn, "?window=7"))
	require.Equal(t, []string{a, b, quiet}, ids)
	require.Equal(t, []string{"window", "window", "alltime"}, sources)
	require.Equal(t, []int64{14, 4, 0}, scores)
	unforge()

	// A view accepted now reaches trending through the refresh within the contract's bound.
	tok := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": b})
	start := time.Now()
	for _, v := range []string{"n1", "n2", "n3", "n4"} {
		view(t, tok, b, v)
	}
	require.Eventually(t, func() bool {
		ids, sources, scores := trendingIDs(trendingOf(t, tn, "?window=7"))
		return len(ids) == 3 && ids[0] == b && sources[0] == "window" && scores[0] == 5*3+5 && ids[2] == quiet && sources[2] == "alltime"
	}, visibleWithin-time.Since(start), 100*time.Millisecond, "views reach the precomputed window within 10 s")
}
