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
	load := func() ([]analytics.Score, error) {
		loads.Add(1)
		time.Sleep(20 * time.Millisecond) // concurrent misses overlap
		return []analytics.Score{{SceneID: "a", UniqueViews: 1, Impressions: 2}}, nil
	}
	now := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			got, err := c.get("k", now, load)
			require.NoError(t, err)
			require.Equal(t, int64(5), got[0].Value())
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
	_, err = c.get("other", now, func() ([]analytics.Score, error) { return nil, errors.New("down") })
	require.Error(t, err)
	_, err = c.get("other", now, load)
	require.NoError(t, err, "a failed load is not cached")
}
