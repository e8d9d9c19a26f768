package db

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Health check of an idle LISTEN connection. A connection whose peer vanished without closing
// it (a half-open TCP connection: a network partition, a frozen or killed host) never delivers
// another notification and never reports an error by itself; the caches would then serve stale
// entries forever. So after DefaultHealthEvery without a notification the listener runs a query
// on the connection and gives it DefaultHealthTimeout to answer; otherwise the connection is
// dropped (Live turns false at once, so the caches are bypassed), and a new one is opened and
// the caches flushed. A dead connection is thus noticed within HealthEvery + HealthTimeout.
const (
	DefaultHealthEvery   = 5 * time.Second
	DefaultHealthTimeout = 3 * time.Second
)

// Listener is what a cache needs from a Postgres LISTEN loop.
type Listener struct {
	// Channel is the NOTIFY channel.
	Channel string
	// OnConnect runs each time the connection is (re)established, before Live turns true:
	// anything may have changed while nobody was listening, so caches flush here.
	OnConnect func()
	// OnNotify runs for every notification's payload.
	OnNotify func(payload string)
	// Live is true while the connection is up; a cache must be bypassed while it is false,
	// because a notification missed then would leave a stale entry forever.
	Live *atomic.Bool
	// Backend, if not nil, holds the Postgres backend pid of the current connection (0 while
	// there is none), for diagnostics and the tests that kill it.
	Backend *atomic.Uint32
	Log     *slog.Logger
	// HealthEvery and HealthTimeout override DefaultHealthEvery and DefaultHealthTimeout.
	HealthEvery, HealthTimeout time.Duration
	// Barrier, if not nil, is heard on the same connection: its Wait then returns only once
	// OnNotify has handled every notification committed before the Wait.
	Barrier *Barrier
}

// Listen keeps a LISTEN connection open until ctx ends, reconnecting with backoff. It returns
// when ctx is done.
func Listen(ctx context.Context, pool *pgxpool.Pool, l Listener) {
	if l.HealthEvery <= 0 {
		l.HealthEvery = DefaultHealthEvery
	}
	if l.HealthTimeout <= 0 {
		l.HealthTimeout = DefaultHealthTimeout
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, l)
		if l.Live.Swap(false) {
			// It was listening: a new loss starts from the shortest wait again, so blips
			// days apart do not each wait the longest backoff.
			backoff = 100 * time.Millisecond
		}
		if l.Backend != nil {
			l.Backend.Store(0)
		}
		if ctx.Err() != nil {
			return
		}
		l.Log.Warn("LISTEN connection lost; cache bypassed until it is back", "channel", l.Channel, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, l Listener) error {
	acquireCtx, cancel := context.WithTimeout(ctx, l.HealthEvery+l.HealthTimeout)
	pooled, err := pool.Acquire(acquireCtx)
	cancel()
	if err != nil {
		return err
	}
	// The connection will have run LISTEN, so it must never return to the pool.
	conn := pooled.Hijack()
	defer func() {
		// Closing sends a Terminate message; a peer that is gone must not hold us here.
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if err := exec(ctx, l.HealthTimeout, func(ctx context.Context) error {
		// The barrier's channel first, so pg_stat_activity shows the cache's own LISTEN.
		if l.Barrier != nil {
			if _, err := conn.Exec(ctx, "LISTEN "+l.Barrier.channel); err != nil {
				return err
			}
		}
		_, err := conn.Exec(ctx, "LISTEN "+l.Channel)
		return err
	}); err != nil {
		return err
	}
	if l.Backend != nil {
		l.Backend.Store(conn.PgConn().PID())
	}
	l.OnConnect()
	l.Live.Store(true)
	for {
		waitCtx, cancel := context.WithTimeout(ctx, l.HealthEvery)
		n, err := conn.WaitForNotification(waitCtx)
		idle := waitCtx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil && !idle {
			return err
		}
		if err != nil {
			// No notification for a while: make sure the connection is still there. A timeout
			// leaves a pgx connection usable (only the deadline fired), so the same connection
			// answers the check.
			if err := exec(ctx, l.HealthTimeout, func(ctx context.Context) error {
				_, err := conn.Exec(ctx, "SELECT 1")
				return err
			}); err != nil {
				return err
			}
			continue
		}
		if l.Barrier != nil && n.Channel == l.Barrier.channel {
			l.Barrier.heard(n.Payload)
			continue
		}
		l.OnNotify(n.Payload)
	}
}

// exec runs fn with at most timeout to finish.
func exec(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fn(ctx)
}
