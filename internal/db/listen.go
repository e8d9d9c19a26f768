package db

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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
	Log  *slog.Logger
}

// Listen keeps a LISTEN connection open until ctx ends, reconnecting with backoff. It returns
// when ctx is done.
func Listen(ctx context.Context, pool *pgxpool.Pool, l Listener) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, l)
		l.Live.Store(false)
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
	pooled, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection will have run LISTEN, so it must never return to the pool.
	conn := pooled.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+l.Channel); err != nil {
		return err
	}
	l.OnConnect()
	l.Live.Store(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.OnNotify(n.Payload)
	}
}
