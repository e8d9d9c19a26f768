package scene

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/analytics"
)

func TestTrendingSinceIsUTCMidnightOfTheWindowStart(t *testing.T) {
	berlin := time.FixedZone("UTC+2", 2*3600)
	for _, tc := range []struct {
		now    time.Time
		window int
		want   string
	}{
		{time.Date(2026, 11, 22, 13, 5, 0, 0, time.UTC), 7, "2026-11-15T00:00:00Z"},
		{time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), 1, "2026-11-21T00:00:00Z"},
		{time.Date(2026, 11, 22, 23, 59, 59, 0, time.UTC), 90, "2026-08-24T00:00:00Z"},
		{time.Date(2026, 3, 1, 1, 0, 0, 0, berlin), 1, "2026-02-27T00:00:00Z"}, // 23:00 UTC on Feb 28
	} {
		require.Equal(t, tc.want, trendingSince(tc.now, tc.window).Format(time.RFC3339), "%s window %d", tc.now, tc.window)
	}
}

func TestScoreCacheReusesForTTLAndSharesMisses(t *testing.T) {
	var c scoreCache
	var loads atomic.Int64
	load := func() (windowList, time.Duration, error) {
		loads.Add(1)
		time.Sleep(20 * time.Millisecond) // concurrent misses overlap
		return windowList{scores: []analytics.Score{{SceneID: "a", UniqueViews: 1, Impressions: 2}}, complete: true}, time.Hour, nil
	}
	now := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			got, err := c.get("k", now, load)
			require.NoError(t, err)
			require.Equal(t, int64(5), got.scores[0].Value())
		})
	}
	wg.Wait()
	require.Equal(t, int64(1), loads.Load(), "concurrent misses share one load")
	_, err := c.get("k", now.Add(scoreTTL-time.Millisecond), load)
	require.NoError(t, err)
	require.Equal(t, int64(1), loads.Load(), "reused within the TTL")
	_, err = c.get("k", now.Add(scoreTTL), load)
	require.NoError(t, err)
	require.Equal(t, int64(2), loads.Load(), "loaded again after it")
	_, err = c.get("other", now, func() (windowList, time.Duration, error) { return windowList{}, 0, errors.New("down") })
	require.Error(t, err)
	_, err = c.get("other", now, load)
	require.NoError(t, err, "a failed load is not cached")
}

// TestScoreCacheKeepsPrecomputedScoresNoLongerThanTheirFreshness: scores the load says are
// fresh for less than scoreTTL (a precomputed window already a few seconds old) expire then.
func TestScoreCacheKeepsPrecomputedScoresNoLongerThanTheirFreshness(t *testing.T) {
	var c scoreCache
	loads := 0
	load := func() (windowList, time.Duration, error) {
		loads++
		return windowList{}, 500 * time.Millisecond, nil
	}
	now := time.Now()
	for _, at := range []time.Duration{0, 499 * time.Millisecond, 500 * time.Millisecond} {
		_, err := c.get("k", now.Add(at), load)
		require.NoError(t, err)
	}
	require.Equal(t, 2, loads, "reused for 500 ms, not scoreTTL")
	_, err := c.get("z", now, func() (windowList, time.Duration, error) { loads++; return windowList{}, 0, nil })
	require.NoError(t, err)
	_, err = c.get("z", now, func() (windowList, time.Duration, error) { loads++; return windowList{}, 0, nil })
	require.NoError(t, err)
	require.Equal(t, 4, loads, "scores already at their age limit are not reused")
}

func TestWantedWindowsAreAnnouncedOncePerInterval(t *testing.T) {
	var c scoreCache
	now := time.Now()
	require.True(t, c.shouldWant("i|7", now))
	require.False(t, c.shouldWant("i|7", now.Add(wantEvery-time.Second)))
	require.True(t, c.shouldWant("i|8", now), "each window on its own")
	require.True(t, c.shouldWant("i|7", now.Add(wantEvery)))
	c.unwant("i|8")
	require.True(t, c.shouldWant("i|8", now.Add(time.Second)), "announced again after a failed announcement")
	require.Less(t, wantEvery, analytics.DemandFor, "announced again before the leader forgets it")
}
