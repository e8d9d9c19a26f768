//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

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

	// Trending answers from the precomputed window: a row written there (as a refresh would,
	// with a later computed_at) is what the next request ranks. The refresher rewrites only
	// scenes whose numbers changed, so it stays until removed below.
	forge := func(scene string, unique, impressions uint64, later time.Duration) {
		require.NoError(t, env.Process.CH.Exec(ctx, "INSERT INTO "+env.Config.ClickHouseDB+"."+analytics.ScoresTable+
			" (integration_id, since, scene_id, unique_views, impressions, computed_at) SELECT ?, toDate(?), ?, toUInt64(?), toUInt64(?), now() + ?",
			tn.IntegrationID, since.Format(time.DateOnly), scene, unique, impressions, int64(later/time.Second)))
	}
	forge(quiet, 10, 10, time.Hour)
	require.Eventually(t, func() bool {
		ids, sources, scores := trendingIDs(trendingOf(t, tn, "?window=7"))
		return ids[0] == quiet && sources[0] == "window" && scores[0] == 40
	}, visibleWithin, 100*time.Millisecond, "the request reads the precomputed window")
	forge(quiet, 0, 0, 2*time.Hour) // newer still, and zero: no activity in the window again

	// A request reads only the best few hundred scenes of the window; when those do not settle
	// the ranking (here 450 scenes that do not exist, so none eligible, outrank every real one)
	// it reads the whole window.
	forgeMany := func(score uint64, later time.Duration) {
		require.NoError(t, env.Process.CH.Exec(ctx, "INSERT INTO "+env.Config.ClickHouseDB+"."+analytics.ScoresTable+
			" (integration_id, since, scene_id, unique_views, impressions, computed_at) SELECT ?, toDate(?), concat('fffffffffffffffff', toString(1000000 + number)), "+
			"toUInt64(0), toUInt64(?), now() + ? FROM numbers(450)", tn.IntegrationID, since.Format(time.DateOnly), score, int64(later/time.Second)))
	}
	forgeMany(1000, 3*time.Hour)
	top, _, _, _, err := env.Process.Views.Precomputed(ctx, tn.IntegrationID, since, 400)
	require.NoError(t, err)
	require.Len(t, top, 400)
	require.NotContains(t, []string{top[0].SceneID, top[399].SceneID}, a)
	time.Sleep(2 * time.Second) // the process's cached window expires
	ids, sources, scores = trendingIDs(trendingOf(t, tn, "?window=7"))
	require.Equal(t, []string{a, b, quiet}, ids)
	require.Equal(t, []string{"window", "window", "alltime"}, sources)
	require.Equal(t, []int64{14, 4, 0}, scores)
	forgeMany(0, 4*time.Hour)

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
