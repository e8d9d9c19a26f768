package db

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"entgo.io/ent/dialect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splathost/splathost/ent"
)

// ReadApplicationName is the application_name of the standby pool's connections, so an
// operator (and the cluster test) can tell them apart in the standby's pg_stat_activity.
const ReadApplicationName = "splathost-read"

// standby is the hot standby a DB sends its lag-tolerant reads to, and what its watcher last
// learnt of how far behind the primary it is.
type standby struct {
	pool   *pgxpool.Pool
	maxLag time.Duration
	// fresh says the standby answered the last check and had replayed everything the primary
	// had written maxLag ago.
	fresh atomic.Bool
	// watching starts the watcher on the first read through DB.Read: a process that never
	// reads there (the gateway, the user service) opens no standby connection at all.
	watching sync.Once
	started  atomic.Bool
	watch    func()
	stop     context.CancelFunc
	done     chan struct{}
}

// begin starts the watcher once. Reads go to the primary until its first check passes.
func (s *standby) begin() {
	s.watching.Do(func() {
		s.started.Store(true)
		go s.watch()
	})
}

// UseStandby sends the reads of d.Read to the hot standby at url while it is at most maxLag
// behind the primary, and to the primary otherwise (the standby down, lagging, or failing a
// query). The standby is optional: one that cannot be reached at start only means the primary
// serves those reads until it can.
func (d *DB) UseStandby(ctx context.Context, url string, maxLag time.Duration, log *slog.Logger) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("postgres read url: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = ReadApplicationName
	pool, drv, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(context.Background())
	s := &standby{pool: pool, maxLag: maxLag, stop: stop, done: make(chan struct{})}
	s.watch = func() { s.follow(wctx, d.Pool, log) }
	d.standby = s
	d.Read = ent.NewClient(ent.Driver(standbyDriver{standby: drv, primary: d.primary, s: s}))
	return nil
}

// close stops the watcher and releases the standby's connections.
func (s *standby) close() {
	s.stop()
	s.watching.Do(func() {}) // no watcher starts after this
	if s.started.Load() {
		<-s.done
	}
	s.pool.Close()
}

// lsnSample is the primary's WAL position at one moment.
type lsnSample struct {
	at  time.Time
	lsn uint64
}

// follow samples the primary's WAL position and the standby's replay position a few times per
// maxLag: the standby is fresh while every sample older than maxLag has been replayed. Lag is
// measured against the primary's own writes rather than by the standby's last replayed commit
// time, which grows without bound while the primary is merely idle.
func (s *standby) follow(ctx context.Context, primary *pgxpool.Pool, log *slog.Logger) {
	defer close(s.done)
	every := min(max(s.maxLag/4, 50*time.Millisecond), 500*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var pending []lsnSample
	for {
		now := time.Now()
		if lsn, err := queryLSN(ctx, primary, "SELECT pg_current_wal_lsn()::text"); err == nil {
			pending = append(pending, lsnSample{at: now, lsn: lsn})
		}
		// A primary that does not answer adds no sample: the standby is judged on what the
		// primary had written before.
		replayed, err := queryLSN(ctx, s.pool, "SELECT coalesce(pg_last_wal_replay_lsn(), '0/0')::text")
		fresh := err == nil
		if fresh {
			for len(pending) > 0 && pending[0].lsn <= replayed {
				pending = pending[1:]
			}
			fresh = len(pending) == 0 || now.Sub(pending[0].at) <= s.maxLag
		}
		if len(pending) > 1024 {
			pending = pending[len(pending)-1024:] // a long outage: the oldest say nothing new
		}
		if was := s.fresh.Swap(fresh); was != fresh {
			log.Info("postgres standby reads", "fresh", fresh, "maxLag", s.maxLag.String(), "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// queryLSN runs a query answering one pg_lsn as text and parses it.
func queryLSN(ctx context.Context, pool *pgxpool.Pool, query string) (uint64, error) {
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var s string
	if err := pool.QueryRow(qctx, query).Scan(&s); err != nil {
		return 0, err
	}
	return parseLSN(s)
}

// parseLSN reads Postgres's text form of a WAL position, "hi/lo" in hex.
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("not a pg_lsn: %q", s)
	}
	return h<<32 | l, nil
}

// standbyDriver sends reads to the standby while it is fresh and everything else to the
// primary. A read the standby fails (it went away, or a recovery conflict cancelled it) is
// asked of the primary instead: reads are safe to repeat, and the caller asked for an answer,
// not for a particular server.
type standbyDriver struct {
	standby, primary dialect.Driver
	s                *standby
}

// Query reads from the standby when it is fresh, else (or when it fails) from the primary.
func (d standbyDriver) Query(ctx context.Context, query string, args, v any) error {
	d.s.begin()
	if d.s.fresh.Load() {
		err := d.standby.Query(ctx, query, args, v)
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return d.primary.Query(ctx, query, args, v)
}

// Exec writes, so it goes to the primary.
func (d standbyDriver) Exec(ctx context.Context, query string, args, v any) error {
	return d.primary.Exec(ctx, query, args, v)
}

// Tx is the primary's: a transaction is where read-your-writes is promised.
func (d standbyDriver) Tx(ctx context.Context) (dialect.Tx, error) { return d.primary.Tx(ctx) }

// Close releases nothing: the DB owns both pools.
func (d standbyDriver) Close() error { return nil }

// Dialect is Postgres.
func (d standbyDriver) Dialect() string { return dialect.Postgres }
