package db

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// barrierTimeout bounds one barrier round (its NOTIFY and its return on the LISTEN connection);
// a round that takes longer fails its readers, who then read the database.
const barrierTimeout = 2 * time.Second

// errBarrierLost is what the readers of a round get when its notice never came back.
var errBarrierLost = errors.New("barrier notice did not come back on the LISTEN connection")

// Barrier gives a LISTEN cache read-your-writes across processes. A change committed in
// another process reaches this one's cache only when its NOTIFY is read from the LISTEN
// connection, which may be after a client that saw the change's 2xx has already sent its next
// read here. Postgres delivers notifications to a listening session in commit order, across
// channels, so a NOTIFY this process sends on its own channel after the read arrived comes back
// only after every notification committed before it, the change's included, has been handled.
// Wait does exactly that, and shares one round among every read waiting at once, so a busy
// cache pays one small statement per round trip, not one per read.
//
// The zero value is not usable: make one with NewBarrier and hand it to the Listener
// (Listener.Barrier) whose handling it must wait for.
type Barrier struct {
	pool    *pgxpool.Pool
	channel string // this barrier's own channel: no other process hears its rounds

	mu      sync.Mutex
	want    uint64        // the highest round a reader waits for
	sent    uint64        // the last round started (its NOTIFY may still be on its way)
	seen    uint64        // the last round whose notice came back
	failed  uint64        // rounds up to this one failed: their readers read the database
	running bool          // a goroutine is sending rounds
	changed chan struct{} // closed (and replaced) whenever seen or failed moves
}

// NewBarrier makes a barrier sending its rounds through pool.
func NewBarrier(pool *pgxpool.Pool) *Barrier {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Barrier{pool: pool, channel: "splathost_barrier_" + hex.EncodeToString(b[:]), changed: make(chan struct{})}
}

// Wait returns nil once every notification committed before Wait was called has been handled
// by the barrier's Listener (its OnNotify has returned), or an error when that cannot be
// known in time (the connection is down, ctx ended): the caller must then read the database.
func (b *Barrier) Wait(ctx context.Context) error {
	b.mu.Lock()
	// A round already started may have committed its NOTIFY before this read arrived: only a
	// round started from now on proves anything.
	target := b.sent + 1
	b.want = max(b.want, target)
	if !b.running {
		b.running = true
		go b.run()
	}
	for b.seen < target {
		if b.failed >= target {
			b.mu.Unlock()
			return errBarrierLost
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		b.mu.Lock()
	}
	b.mu.Unlock()
	return nil
}

// run sends rounds while readers wait for one not yet started, one at a time.
func (b *Barrier) run() {
	for {
		b.mu.Lock()
		if b.want <= b.sent {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.sent++
		n, ch := b.sent, b.changed
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), barrierTimeout)
		_, err := b.pool.Exec(ctx, "SELECT pg_notify($1, $2)", b.channel, strconv.FormatUint(n, 10))
		if err == nil {
			b.mu.Lock()
			for b.seen < n && ctx.Err() == nil {
				b.mu.Unlock()
				select {
				case <-ch:
				case <-ctx.Done():
				}
				b.mu.Lock()
				ch = b.changed
			}
			b.mu.Unlock()
		}
		cancel()
		b.mu.Lock()
		if b.seen < n {
			b.failed = max(b.failed, n)
			b.signal()
		}
		b.mu.Unlock()
	}
}

// heard records a round's notice read from the LISTEN connection.
func (b *Barrier) heard(payload string) {
	n, err := strconv.ParseUint(payload, 10, 64)
	if err != nil {
		return
	}
	b.mu.Lock()
	if n > b.seen {
		b.seen = n
		b.signal()
	}
	b.mu.Unlock()
}

// signal wakes every waiter. b.mu is held.
func (b *Barrier) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}
