//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/testenv"
)

// streamerLockKey is the view streamer's advisory lock (analytics.streamerLock) as pg_locks
// lists it: high half in classid, low half in objid.
const streamerLockKey int64 = 7_305_118_303

// terminateStreamerLock kills the backend holding the view streamer's advisory lock, as a
// network cut or an operator would, and returns how many it killed (0 when nobody holds it).
func terminateStreamerLock(t *testing.T) int {
	t.Helper()
	var n int
	err := env.Process.DB.Pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid = $1::bigint::oid AND objid = $2::bigint::oid`,
		streamerLockKey>>32, streamerLockKey&0xffffffff).Scan(&n)
	require.NoError(t, err)
	return n
}

// TestViewStreamerLockConnectionKilled runs two view streamers (the product's and a second one)
// while beacons arrive, and kills the lock holder's connection three times in the middle of the
// stream: the streamer that lost its lock must stop before the other takes over, so every view is
// counted exactly once in viewCount, in ClickHouse and in trending's impressions.
func TestViewStreamerLockConnectionKilled(t *testing.T) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	const n, visitors, workers = 1200, 60, 4
	// One session per visitor, as 60 browsers would have (a session's new visitors are bounded).
	toks := viewerSessions(t, tn, id, visitors)

	ctx, cancel := context.WithCancel(context.Background())
	second := &analytics.Streamer{Pool: env.Process.DB.Pool, Views: env.Process.Views, Idle: 50 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	stopped := make(chan struct{})
	go func() { second.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })

	var posted, failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				r, err := testenv.Do(env.URL, "POST", "/api/embed/views", sessionHeaders(toks[i%visitors]),
					map[string]any{"splatId": id, "visitorId": fmt.Sprintf("visitor-%d", i%visitors)})
				if err != nil || r.Status != 202 {
					failed.Add(1)
				}
				posted.Add(1)
				time.Sleep(5 * time.Millisecond) // a stream over seconds, not one batch
			}
		})
	}
	kills := 0
	for _, at := range []int64{n / 5, n / 2, 4 * n / 5} {
		require.Eventually(t, func() bool { return posted.Load() >= at }, eventuallyWait, 10*time.Millisecond)
		// A streamer holds the lock again within seconds of the previous kill; the count of kills
		// is checked after the counts, which are what a split brain breaks.
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if terminateStreamerLock(t) > 0 {
				kills++
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wg.Wait()
	require.Zero(t, failed.Load(), "every beacon accepted")

	require.Eventually(t, func() bool { return viewCount(t, tn, id) >= n }, eventuallyWait, 200*time.Millisecond)
	require.Equal(t, int64(n), viewCount(t, tn, id), "viewCount counts each view once")
	rows, distinct := chCount(t, id)
	require.Equal(t, uint64(n), distinct, "every accepted view is stored")
	require.Equal(t, uint64(n), rows, "and none twice")
	want := int64(visitors*3 + n)
	var score int64
	require.Eventually(t, func() bool {
		ids, sources, scores := trendingIDs(trendingOf(t, tn, "?limit=1"))
		if len(ids) != 1 || ids[0] != id || sources[0] != "window" {
			return false
		}
		score = scores[0]
		return score >= want
	}, visibleWithin+5*time.Second, 200*time.Millisecond)
	require.Equal(t, want, score, "trending impressions count each view once")
	require.Equal(t, 3, kills, "a streamer took the lock again after each kill")
}

// TestTrendingWithoutClickHouse crashes ClickHouse: trending still answers 200, ranked by the
// all-time view counts in Postgres with every item's source "alltime", and ranks by the window
// again once ClickHouse is back; scene analytics answer 503 meanwhile. On the cluster shape one
// node's crash is no outage: trending keeps ranking by the window.
func TestTrendingWithoutClickHouse(t *testing.T) {
	tn := newTenant(t)
	quiet := publicScene(t, tn, "ada")
	viewed := publicScene(t, tn, "ada")
	tok := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": viewed})
	view(t, tok, viewed, "v1")
	require.Eventually(t, func() bool { return viewCount(t, tn, viewed) == 1 }, visibleWithin, 50*time.Millisecond)

	up := true
	t.Cleanup(func() {
		if !up {
			require.NoError(t, env.StartClickHouse(), "the other tests need ClickHouse back")
		}
	})
	require.NoError(t, env.CrashClickHouse())
	up = false
	if env.State.Cluster {
		// On the cluster shape the crash takes one node of four (clickhouse-1-1): no outage, the
		// product dials the next node, so trending keeps its window and analytics answer.
		ids, sources, _ := trendingIDs(trendingOf(t, tn, ""))
		require.Equal(t, []string{viewed, quiet}, ids)
		require.Equal(t, "window", sources[0], "one ClickHouse node down is not a ClickHouse outage")
		require.Equal(t, 200, do(t, "GET", splatPath(viewed)+"/analytics", tn.keys(""), nil).Status)
		require.NoError(t, env.StartClickHouse())
		up = true
		return
	}
	for i := 0; i < 3; i++ {
		body := trendingOf(t, tn, "")
		ids, sources, scores := trendingIDs(body)
		require.Equal(t, []string{viewed, quiet}, ids, "all-time order: most viewed first")
		require.Equal(t, []string{"alltime", "alltime"}, sources)
		require.Equal(t, []int64{0, 0}, scores)
		require.EqualValues(t, 0, body["trending"].(map[string]any)["windowCount"])
		require.EqualValues(t, 2, body["trending"].(map[string]any)["count"])
	}
	// Scene analytics have no other source: 503 with the envelope (retry later), never a 500.
	r := do(t, "GET", splatPath(viewed)+"/analytics", tn.keys(""), nil)
	requireEnvelope(t, r, 503)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	require.NoError(t, env.StartClickHouse())
	up = true
	require.Eventually(t, func() bool {
		ids, sources, _ := trendingIDs(trendingOf(t, tn, ""))
		return len(ids) == 2 && ids[0] == viewed && sources[0] == "window"
	}, eventuallyWait, 200*time.Millisecond, "the window ranking comes back with ClickHouse")
}

// TestReadsSurviveTerminatedConnections terminates every Postgres backend of the product's
// pool while it is warm (connections used within the last second are not pinged before reuse):
// the next reads, concurrent ones included, all answer 200 instead of one 500 per dead
// connection. (A statement in flight at the moment its backend dies is another case: reads are
// retried once, writes fail.)
func TestReadsSurviveTerminatedConnections(t *testing.T) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	newScene(t, tn, "ada", 4)
	paths := []string{"/api/v1/splats", "/api/v1/splats/trending", "/api/v1/external-user/usage", splatPath(id)}
	burst := func() (statuses map[int]int) {
		statuses = map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < 24; i++ {
			wg.Go(func() {
				r, err := testenv.Do(env.URL, "GET", paths[i%len(paths)], tn.keys("ada"), nil)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					statuses[-1]++
					return
				}
				statuses[r.Status]++
			})
		}
		wg.Wait()
		return statuses
	}
	for round := 0; round < 3; round++ {
		require.Equal(t, map[int]int{200: 24}, burst(), "warm-up")
		var pids []int32
		require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(), `SELECT array_agg(pid) FILTER (WHERE pg_terminate_backend(pid))
			FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&pids))
		killed := len(pids)
		require.Positive(t, killed)
		// The backends exit within milliseconds; the reads come once they have, still well
		// inside the second after which the pool would ping an idle connection anyway.
		// The test's own pool lost its connections too: its check retries like the product's
		// reads (ReadRow) and simply looks again if it still draws a dead one.
		require.Eventually(t, func() bool {
			var left int
			err := env.Process.DB.ReadRow(context.Background(),
				"SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", pids).Scan(&left)
			return err == nil && left == 0
		}, time.Second, time.Millisecond)
		require.Equal(t, map[int]int{200: 24}, burst(), "round %d: reads right after %d backends were terminated", round, killed)
	}
	// Every backend went, the LISTEN connections too: the stack is left ready for the next
	// test, as every test that breaks an engine leaves it.
	require.Eventually(t, func() bool { return do(t, "GET", "/readyz", nil, nil).Status == 200 }, eventuallyWait, 50*time.Millisecond)
}

// TestReadRetriedWhenItsBackendDies terminates the backend of a read while it runs: the read is
// run again on a new connection and succeeds, where it used to fail with the termination.
func TestReadRetriedWhenItsBackendDies(t *testing.T) {
	ctx := context.Background()
	const marker = "SELECT pg_sleep(0.4), 'read-retried-when-its-backend-dies'"
	killed := make(chan int, 1)
	go func() {
		for i := 0; i < 100; i++ {
			var n int
			err := env.Process.DB.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE query = $1 AND state = 'active' AND pid <> pg_backend_pid()`, marker).Scan(&n)
			if err != nil || n > 0 {
				killed <- n
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		killed <- 0
	}()
	rows, err := env.Process.DB.Ent.QueryContext(ctx, marker)
	require.NoError(t, err, "the read is run again after its backend was terminated")
	require.NoError(t, rows.Close())
	require.Equal(t, 1, <-killed, "its backend was terminated while it ran")
}
