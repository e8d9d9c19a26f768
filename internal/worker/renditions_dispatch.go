package worker

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/metrics"
	"github.com/splathost/splathost/workflows"
	"github.com/splathost/splathost/workflows/contract"
)

// Rendition dispatch (issue 27): a pending scene (processing_state is the outbox, written in
// the commit's transaction) gets its SceneRenditions workflow from the dispatcher of its media
// task queue, never from a best-effort start beside the request. Each tick the dispatcher
// counts the renditions in flight of each lane (pending scenes it started within
// dispatchRecheck; small and large uploads, contract.Lanes), fills the free places of that
// lane's window (a few conversions' worth, so the task queue never holds a burst, and a backlog
// of large scans never keeps a small scene from starting), choosing the integration with the
// fewest in flight first and its oldest scene, and starts
// them one dispatchGap apart. A start that fails gives its scene back (it is picked again) and
// backs the dispatcher off, doubling up to dispatchMaxBackoff: Temporal on SQLite answers a
// flood of starts with SQLITE_BUSY, and a paced dispatcher is what keeps it from one. A scene
// whose workflow died without recording an outcome is started again after dispatchRecheck (a
// running one is found running, and its start time refreshed).
const (
	dispatchEvery      = 500 * time.Millisecond
	dispatchRecheck    = 2 * time.Minute
	dispatchGap        = 50 * time.Millisecond
	dispatchMaxBackoff = 30 * time.Second
	dispatchStartLimit = 10 * time.Second
)

// renditionDispatcher starts the renditions of its media task queue.
type renditionDispatcher struct {
	client client.Client
	pool   *pgxpool.Pool
	queue  string
	lanes  contract.Lanes
	// windows is how many renditions of each lane the dispatcher keeps in flight: each lane
	// has its own, so a backlog of large scans never keeps a small scene from starting.
	windows map[contract.Lane]int
	log     *slog.Logger
}

// lanesOf is the deployment's lane rule.
func lanesOf(cfg config.Config) contract.Lanes {
	return contract.Lanes{SmallBytes: cfg.RenditionSmallBytes}
}

// dispatchWindows are the windows of a media worker's lanes.
func dispatchWindows(cfg config.Config) map[contract.Lane]int {
	return map[contract.Lane]int{
		contract.LaneLarge: dispatchWindow(cfg.RenditionWindow, cfg.RenditionConcurrency),
		contract.LaneSmall: dispatchWindow(0, cfg.RenditionSmallConcurrency),
	}
}

// dispatchWindow is the renditions in flight a media worker of concurrency conversions keeps:
// enough that a conversion never waits for the next tick, few enough that another
// integration's scene waits behind at most that many.
func dispatchWindow(configured, concurrency int) int {
	if configured > 0 {
		return configured
	}
	return 2*max(1, concurrency) + 2
}

// run ticks until ctx ends.
func (d *renditionDispatcher) run(ctx context.Context) {
	backoff := time.Duration(0)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := d.tick(ctx)
		wait := dispatchEvery
		switch {
		case err == nil:
			backoff = 0
		case ctx.Err() != nil:
			return
		default:
			backoff = min(max(2*backoff, time.Second), dispatchMaxBackoff)
			wait = backoff
			d.log.Warn("rendition dispatch: backing off; the scenes stay pending and are picked again",
				"error", err, "retryIn", backoff.String())
		}
		t.Reset(wait)
	}
}

// candidate is a pending scene not in flight.
type candidate struct {
	workflows.RenditionInput
	rank int // its place in its integration's queue, from 1
}

// queueCond keeps a dispatcher to the scenes planned on its queue (and those planned on none).
const queueCond = `(s.rendition_queue = $1 OR s.rendition_queue IS NULL OR s.rendition_queue = '')`

// laneCond keeps a query to one lane's scenes ($3 is contract.Lanes.SmallBytes), as
// contract.Lanes.Of decides it.
func laneCond(lane contract.Lane) string {
	small := `(s.file_size_bytes > 0 AND s.file_size_bytes <= $3)`
	if lane == contract.LaneSmall {
		return small
	}
	return `NOT ` + small
}

// tick fills the window once; the error is a start or database failure to back off from.
func (d *renditionDispatcher) tick(ctx context.Context) error {
	picked, err := d.claim(ctx)
	if err != nil || len(picked) == 0 {
		return err
	}
	for i, c := range picked {
		if i > 0 {
			select {
			case <-ctx.Done():
				return d.release(picked[i:], ctx.Err())
			case <-time.After(dispatchGap):
			}
		}
		sctx, cancel := context.WithTimeout(ctx, dispatchStartLimit)
		err := workflows.StartSceneRenditions(sctx, d.client, d.queue, c.RenditionInput)
		cancel()
		if err != nil {
			metrics.RenditionStarts.WithLabelValues("error").Inc()
			return d.release(picked[i:], err)
		}
		metrics.RenditionStarts.WithLabelValues("started").Inc()
	}
	return nil
}

// release gives scenes whose start failed back to the outbox, so the next tick picks them
// rather than waiting out dispatchRecheck, and returns cause.
func (d *renditionDispatcher) release(rest []candidate, cause error) error {
	ids := make([]string, len(rest))
	for i, c := range rest {
		ids[i] = c.SceneID
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := d.pool.Exec(ctx, `UPDATE scenes SET rendition_started_at = NULL WHERE id = ANY($1)`, ids); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// claim picks the scenes to start in this tick and marks them started, in one transaction
// under the queue's advisory lock (two media workers of a queue take turns, so their windows
// do not add up and they do not pick the same scenes).
func (d *renditionDispatcher) claim(ctx context.Context) ([]candidate, error) {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtext('rendition-dispatch:' || $1))`, d.queue).Scan(&locked); err != nil || !locked {
		return nil, err
	}
	var picked []candidate
	for _, lane := range []contract.Lane{contract.LaneSmall, contract.LaneLarge} {
		p, err := d.claimLane(ctx, tx, lane)
		if err != nil {
			return nil, err
		}
		picked = append(picked, p...)
	}
	if len(picked) == 0 {
		return nil, nil
	}
	ids := make([]string, len(picked))
	for i, c := range picked {
		ids[i] = c.SceneID
	}
	if _, err := tx.Exec(ctx, `UPDATE scenes SET rendition_started_at = now() WHERE id = ANY($1)`, ids); err != nil {
		return nil, err
	}
	return picked, tx.Commit(ctx)
}

// claimLane picks the scenes of one lane to start in this tick: its window's free places, filled
// fairly between integrations.
func (d *renditionDispatcher) claimLane(ctx context.Context, tx pgx.Tx, lane contract.Lane) ([]candidate, error) {
	inFlight := map[string]int{}
	rows, err := tx.Query(ctx, `SELECT s.integration_id, count(*) FROM scenes s
		WHERE s.processing_state = 'pending' AND s.rendition_started_at > now() - $2::float8 * interval '1 second' AND `+queueCond+`
			AND `+laneCond(lane)+`
		GROUP BY s.integration_id`, d.queue, dispatchRecheck.Seconds(), d.lanes.SmallBytes)
	if err != nil {
		return nil, err
	}
	total := 0
	for rows.Next() {
		var integ string
		var n int
		if err := rows.Scan(&integ, &n); err != nil {
			rows.Close()
			return nil, err
		}
		inFlight[integ] = n
		total += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	free := d.windows[lane] - total
	if free <= 0 {
		return nil, nil
	}
	// Each integration's oldest `free` scenes not in flight: whatever the fair share turns
	// out to be, it is among them.
	rows, err = tx.Query(ctx, `SELECT c.id, c.integration_id, coalesce(eu.external_user_id, ''), c.rank FROM (
			SELECT s.id, s.integration_id, s.owner_id, s.created_at,
				row_number() OVER (PARTITION BY s.integration_id ORDER BY s.created_at, s.id) AS rank
			FROM scenes s
			WHERE s.processing_state = 'pending' AND (s.rendition_started_at IS NULL OR s.rendition_started_at <= now() - $2::float8 * interval '1 second')
				AND `+queueCond+` AND `+laneCond(lane)+`
		) c LEFT JOIN external_users eu ON eu.id = c.owner_id
		WHERE c.rank <= $4 ORDER BY c.rank, c.created_at, c.id`, d.queue, dispatchRecheck.Seconds(), d.lanes.SmallBytes, free)
	if err != nil {
		return nil, err
	}
	var cands []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.SceneID, &c.IntegrationID, &c.ExternalUserID, &c.rank); err != nil {
			rows.Close()
			return nil, err
		}
		cands = append(cands, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return pickFair(inFlight, cands, free), nil
}

// pickFair chooses up to free candidates, each time from the integration with the fewest
// renditions in flight (counting those just chosen), its oldest first: one integration's
// backlog never holds the places another integration's first scene needs. cands are in
// rank order; integrations that tie take turns in the order their candidates come.
func pickFair(inFlight map[string]int, cands []candidate, free int) []candidate {
	queues := map[string][]candidate{}
	var order []string
	for _, c := range cands {
		if _, ok := queues[c.IntegrationID]; !ok {
			order = append(order, c.IntegrationID)
		}
		queues[c.IntegrationID] = append(queues[c.IntegrationID], c)
	}
	for _, q := range queues {
		slices.SortStableFunc(q, func(a, b candidate) int { return cmp.Compare(a.rank, b.rank) })
	}
	n := map[string]int{}
	for k, v := range inFlight {
		n[k] = v
	}
	var out []candidate
	for len(out) < free {
		best := ""
		for _, integ := range order {
			if len(queues[integ]) == 0 {
				continue
			}
			if best == "" || n[integ] < n[best] {
				best = integ
			}
		}
		if best == "" {
			break
		}
		out = append(out, queues[best][0])
		queues[best] = queues[best][1:]
		n[best]++
		// The chosen integration goes to the back of the ties.
		order = append(slices.DeleteFunc(order, func(s string) bool { return s == best }), best)
	}
	return out
}

// registerRenditionBacklog exports the renditions still pending, deployment-wide: how many,
// and the age of the oldest (since its commit), so an alert sees the pipeline falling behind.
func registerRenditionBacklog(pool *pgxpool.Pool) {
	metrics.Gauge("splathost_renditions_pending", "Scenes whose rendition is pending (not yet ready, failed or skipped).",
		pgGauge(pool, `SELECT count(*)::float8 FROM scenes WHERE processing_state = 'pending'`))
	metrics.Gauge("splathost_renditions_pending_oldest_seconds",
		"Age in seconds of the oldest scene whose rendition is pending, since its commit (0: none pending).",
		pgGauge(pool, `SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM scenes WHERE processing_state = 'pending'`))
}

// pgGauge reads a gauge's value with query q (one float8, or no row for 0) at scrape time,
// bounded so a slow database cannot hold the scrape.
func pgGauge(pool *pgxpool.Pool, q string) func() (float64, error) {
	return func() (float64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var v float64
		err := pool.QueryRow(ctx, q).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, nil
		}
		return v, err
	}
}
