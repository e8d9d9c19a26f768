package analytics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splathost/splathost/internal/metrics"
	"github.com/splathost/splathost/internal/pgnotify"
)

// streamerLock is the Postgres advisory lock held by the one streamer that drains the outbox;
// its value is arbitrary but fixed forever. One drainer keeps the events in order and makes the
// retry check in Views.Insert race-free.
const streamerLock = 7_305_118_303

// Streamer defaults.
const (
	DefaultBatch = 5000
	DefaultIdle  = 200 * time.Millisecond
	// DefaultInsertTimeout bounds one ClickHouse insert; an insert cut off by it may still land,
	// which the next attempt's deduplication absorbs.
	DefaultInsertTimeout = 15 * time.Second
	// refreshTimeout bounds one round of the trending windows' refresh: by then readers have
	// long stopped trusting the windows (they accept 5 s old ones at most).
	refreshTimeout = 15 * time.Second
	// DefaultFence is how long a new leader waits before its first batch: longer than a lost
	// leader takes to notice (a check every Fence/4, each bounded by lockCheckTimeout) and cancel
	// its insert.
	DefaultFence = 2 * time.Second
)

// Streamer moves accepted views from the Postgres outbox (view_outboxes, written by POST
// /api/embed/views) into ClickHouse, in id order, a batch at a time:
//
//  1. read the oldest rows;
//  2. insert them into view_events (the materialized view fills the daily rollup), skipping the
//     ids already stored, since a failed attempt or a previous leader may have stored them;
//  3. in one Postgres transaction delete the rows and add them to scenes.view_count, announcing
//     the changed scenes on pgnotify.ScenesChannel so the scene caches drop them.
//
// The leader also keeps the trending windows asked for precomputed (see Precomputed), every
// Refresh, and the scene and integration names in step (Names).
//
// Delivery to ClickHouse is at least once and deduplicated by event id, so each accepted view is
// stored exactly once; view_count is exactly once because the count and the deletion commit
// together. While ClickHouse is down the rows wait in Postgres and the streamer retries with
// backoff. Only the holder of an advisory lock drains, so every process may run a Streamer.
//
// It speaks plain pgx, not ent: analytics stays below the product's data model.
type Streamer struct {
	// Pool is the product database's pool (internal/db's DB.Pool).
	Pool *pgxpool.Pool
	// Views should be a view store of the streamer's own (OpenViews), not one whose connections
	// purges, the retention job or requests share: a mutation or DDL that hangs there, and
	// holds every connection of its pool, must never hold the views in the outbox.
	Views *Views
	Log   *slog.Logger
	// Batch, Idle, InsertTimeout, Fence and Refresh default to DefaultBatch, DefaultIdle,
	// DefaultInsertTimeout, DefaultFence and DefaultRefresh.
	Batch         int
	Idle          time.Duration
	InsertTimeout time.Duration
	Fence         time.Duration
	Refresh       time.Duration
	// Names, when set, keeps the scene and integration names in ClickHouse while this process
	// leads (NameSync).
	Names *NameSync

	streamed atomic.Int64
	failures atomic.Int64
}

// Streamed is how many views this streamer has moved (exactly-once counts, not attempts).
func (s *Streamer) Streamed() int64 { return s.streamed.Load() }

// Failures is how many drain attempts failed (ClickHouse or Postgres unavailable).
func (s *Streamer) Failures() int64 { return s.failures.Load() }

// Run drains until ctx ends. It never returns an error: every failure is retried.
func (s *Streamer) Run(ctx context.Context) {
	if s.Batch <= 0 {
		s.Batch = DefaultBatch
	}
	if s.Idle <= 0 {
		s.Idle = DefaultIdle
	}
	if s.InsertTimeout <= 0 {
		s.InsertTimeout = DefaultInsertTimeout
	}
	if s.Fence <= 0 {
		s.Fence = DefaultFence
	}
	if s.Refresh <= 0 {
		s.Refresh = DefaultRefresh
	}
	for ctx.Err() == nil {
		err := s.lead(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.Log.Warn("view streamer: lost its lock connection; retrying", "error", err)
		}
		sleep(ctx, time.Second)
	}
}

// lead takes the advisory lock on a dedicated connection and drains while it holds it. Another
// process holding the lock makes it wait; the lock dies with the connection, so a crashed
// leader is replaced.
//
// Two streamers must never insert at the same time, or both could find a batch absent from
// ClickHouse and both store it (the daily rollup's count would then count those views twice, as
// it did before: 7 493 impressions for 5 000 views). So the leader proves it still holds the lock
// before every batch, a watcher cancels a batch in flight as soon as the lock's connection stops
// answering, and a new leader waits Fence before its first batch, by which time a previous
// leader that lost its connection has noticed and abandoned its insert. Every insert also skips
// the ids already stored.
func (s *Streamer) lead(ctx context.Context) error {
	conn, err := s.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The session holds the lock; it never goes back to the pool.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	for {
		var got bool
		if err := pc.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", streamerLock).Scan(&got); err != nil {
			return err
		}
		if got {
			break
		}
		if !sleep(ctx, 2*time.Second) {
			return nil
		}
	}
	lock := &lockConn{conn: pc}
	lctx, lost := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		lock.watch(lctx, lost, s.Fence/4)
	}()
	// Runs before pc is closed: the watcher must be done with the connection first.
	defer func() {
		lost(nil)
		<-watched
	}()
	if !sleep(lctx, s.Fence) {
		return context.Cause(lctx)
	}
	// The refresher and the name sync write only while this process leads: they end with the
	// leadership, before lead returns.
	beside := []func(context.Context){s.refreshWindows}
	if s.Names != nil {
		beside = append(beside, s.Names.run)
	}
	var besideDone sync.WaitGroup
	for _, f := range beside {
		besideDone.Go(func() { f(lctx) })
	}
	defer func() {
		lost(nil)
		besideDone.Wait()
	}()
	backoff := s.Idle
	for lctx.Err() == nil {
		if err := lock.held(lctx); err != nil {
			lost(err)
			break
		}
		n, err := s.drain(lctx)
		switch {
		case err != nil && lctx.Err() == nil:
			s.failures.Add(1)
			s.Log.Warn("view streamer: batch failed; the views wait in Postgres and are retried", "error", err, "retryIn", backoff.String())
			sleep(lctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
		case err == nil:
			backoff = s.Idle
			if n < s.Batch {
				sleep(lctx, s.Idle)
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return context.Cause(lctx)
}

// refreshWindows keeps the trending windows asked for precomputed until ctx ends (the
// leadership with it). A failed round is retried at the next one; meanwhile requests rank
// their windows themselves.
func (s *Streamer) refreshWindows(ctx context.Context) {
	r := windowRefresher{views: s.Views}
	rounds(ctx, s.Refresh, s.Log, "trending windows: refresh failed; requests rank their windows themselves until it succeeds",
		"trending windows: refreshing again", r.refresh)
}

// rounds runs round every interval until ctx ends, logging failed when rounds start failing
// and recovered when one succeeds again. A round that hangs (a stuck node) is cut off after
// refreshTimeout, so the connection it holds goes back to the streamer's pool.
func rounds(ctx context.Context, every time.Duration, log *slog.Logger, failed, recovered string, round func(context.Context) error) {
	failing := false
	for sleep(ctx, every) {
		rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		err := round(rctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			log.Warn(failed, "error", err)
			failing = true
		case err == nil && failing:
			log.Info(recovered)
			failing = false
		}
	}
}

// lockConn is the connection holding the streamer's advisory lock, shared by the batch loop
// and the watcher (a pgx connection serves one statement at a time).
type lockConn struct {
	mu   sync.Mutex
	conn *pgx.Conn
}

// lockCheckTimeout bounds one ownership check: a connection that does not answer in this time
// is treated as lost (a half-open connection would otherwise hang the check).
const lockCheckTimeout = time.Second

// errLockLost is the cause of a leadership that ended because the lock is no longer held.
var errLockLost = errors.New("the view streamer's advisory lock is no longer held")

// held proves the session still holds the lock: the connection answers and pg_locks lists the
// lock as granted to it.
func (l *lockConn) held(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, lockCheckTimeout)
	defer cancel()
	var ok bool
	// An advisory lock on a bigint key is listed with its high half as classid and its low half
	// as objid.
	err := l.conn.QueryRow(cctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
		AND pid = pg_backend_pid() AND granted AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 1)`,
		int64(uint32(streamerLock>>32)), int64(uint32(streamerLock&0xffffffff))).Scan(&ok)
	if err != nil {
		return fmt.Errorf("%w: %w", errLockLost, err)
	}
	if !ok {
		return errLockLost
	}
	return nil
}

// watch checks the lock every interval until ctx ends, and cancels the leadership (and with it
// any ClickHouse insert in flight) as soon as a check fails.
func (l *lockConn) watch(ctx context.Context, lost context.CancelCauseFunc, interval time.Duration) {
	for sleep(ctx, interval) {
		if err := l.held(ctx); err != nil && ctx.Err() == nil {
			lost(err)
			return
		}
	}
}

// drain moves one batch and returns its size. The insert always skips ids already stored: a
// previous attempt or a previous leader may have stored part of the batch.
func (s *Streamer) drain(ctx context.Context) (int, error) {
	events, err := s.oldest(ctx)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	ictx, cancel := context.WithTimeout(ctx, s.InsertTimeout)
	_, err = s.Views.Insert(ictx, events, true)
	cancel()
	if err != nil {
		return 0, err
	}
	ids := make([]int64, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	if err := s.commit(ctx, ids); err != nil {
		return 0, err
	}
	s.streamed.Add(int64(len(events)))
	metrics.ViewsIngested.Add(float64(len(events)))
	return len(events), nil
}

// oldest reads the next batch of the outbox in id order.
func (s *Streamer) oldest(ctx context.Context) ([]Event, error) {
	rows, err := s.Pool.Query(ctx, `SELECT id, integration_id, scene_id, visitor_id, viewed_at
		FROM view_outboxes ORDER BY id LIMIT $1`, s.Batch)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		err := r.Scan(&e.ID, &e.IntegrationID, &e.SceneID, &e.VisitorID, &e.ViewedAt)
		return e, err
	})
}

// commit deletes the streamed rows and adds them to the scenes' view counts in one
// transaction. The counts come from the rows the DELETE actually removed, so a batch committed
// twice (a second streamer in a split brain) is counted once.
func (s *Streamer) commit(ctx context.Context, ids []int64) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH gone AS (
				DELETE FROM view_outboxes WHERE id = ANY($1) RETURNING scene_id
			), counts AS (
				SELECT scene_id, count(*) AS n FROM gone GROUP BY scene_id
			)
			UPDATE scenes SET view_count = scenes.view_count + counts.n
			FROM counts WHERE scenes.id = counts.scene_id
			RETURNING scenes.integration_id, scenes.id`, ids)
		if err != nil {
			return err
		}
		changed := map[string][]string{}
		var integ, id string
		if _, err := pgx.ForEachRow(rows, []any{&integ, &id}, func() error {
			changed[integ] = append(changed[integ], id)
			return nil
		}); err != nil {
			return err
		}
		for integ, sceneIDs := range changed {
			q, args := pgnotify.ScenesChanged(integ, sceneIDs)
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// Pending is how many accepted views wait in the outbox.
func Pending(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, "SELECT count(*) FROM view_outboxes").Scan(&n)
	return n, err
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
