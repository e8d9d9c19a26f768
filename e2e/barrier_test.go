//go:build e2e

package e2e

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/db"
)

// TestBarrierWaitsForEveryCommittedNotice: a notice committed before Wait has been handled when
// Wait returns, however slow the listener is to handle it (here 300 ms a notice, far longer
// than a client takes to send its next request); many readers share the rounds; without a
// listener Wait fails in bounded time instead of hanging, so the caller reads the database.
func TestBarrierWaitsForEveryCommittedNotice(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pool := env.Process.DB.Pool
	channel := "barrier_test_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var mu sync.Mutex
	var handled []string
	var live atomic.Bool
	b := db.NewBarrier(pool)
	go db.Listen(ctx, pool, db.Listener{Channel: channel, OnConnect: func() {}, Live: &live, Barrier: b,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnNotify: func(p string) {
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			handled = append(handled, p)
			mu.Unlock()
		}})
	require.Eventually(t, live.Load, 10*time.Second, 10*time.Millisecond)
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), handled...)
	}

	for _, p := range []string{"first", "second"} {
		_, err := pool.Exec(ctx, "SELECT pg_notify($1, $2)", channel, p)
		require.NoError(t, err)
	}
	require.Empty(t, seen(), "the listener is still handling the first notice")
	require.NoError(t, b.Wait(ctx))
	require.Equal(t, []string{"first", "second"}, seen(), "every notice committed before the wait was handled")

	// 200 readers at once share a few rounds and all see the notice committed before them.
	_, err := pool.Exec(ctx, "SELECT pg_notify($1, $2)", channel, "third")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var bad atomic.Int32
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.Wait(ctx) != nil || len(seen()) != 3 {
				bad.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Zero(t, bad.Load())

	// Nobody listening for this barrier's rounds: Wait gives up within its bound.
	lost := db.NewBarrier(pool)
	start := time.Now()
	require.Error(t, lost.Wait(ctx))
	require.Less(t, time.Since(start), 5*time.Second)
}
