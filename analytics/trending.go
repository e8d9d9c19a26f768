package analytics

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Precomputed trending windows.
//
// Ranking a window afresh merges the daily rollup's uniq states of every active scene and day
// (80 000 states for a 7-day window over 10 000 scenes): 100-500 ms on the 2-core machine. So
// the view streamer's leader keeps every window asked for in the last DemandFor precomputed in
// ScoresTable, and a trending request reads the window's final numbers (one row per active
// scene) instead. Each round the leader
//
//  1. for each window asked for, takes a snapshot: a hash of the names of the daily rollup's
//     active parts, and ClickHouse's clock (the snapshot's time is the window's computed_at:
//     every view stored before it is in);
//  2. when the rollup's parts changed since the window's last refresh (an insert, a merge, a
//     deletion), ranks it afresh and writes the scenes whose numbers changed; either way it
//     writes the window's heartbeat row (empty scene_id) with the snapshot time.
//
// A reader accepts the window only when its heartbeat is recent (the service's bound keeps
// the contract's 10 s from a view to trending), and otherwise ranks it itself, so a dead or
// slow leader costs speed, never freshness.

// Trending window refresh defaults.
const (
	// TopKept is how many of a window's best scores each refresh writes to TopsTable: a request
	// asking for at most this many reads that one row.
	TopKept = 400
	// DefaultRefresh is how often the streamer's leader refreshes the windows asked for.
	DefaultRefresh = 2 * time.Second
	// DemandFor is how long a window stays precomputed after it was last asked for.
	DemandFor = 10 * time.Minute
)

// Want records that trending was asked for the integration's window of days, so the streamer's
// leader keeps it precomputed for DemandFor. Callers need not call it for every request: once
// in a while (well within DemandFor) is enough.
func (v *Views) Want(ctx context.Context, integrationID string, days int) error {
	// INSERT … SELECT: an INSERT … VALUES through Exec hangs on 18.16 with this client.
	return v.conn.Exec(ctx, "INSERT INTO "+v.db+"."+DemandTable+" (integration_id, window_days, requested_at) SELECT ?, toUInt8(?), now()",
		integrationID, days)
}

// Precomputed returns the best top scores of the window as last refreshed, best first (as
// WindowScores; every score when top is 0), whether that is every active scene of the window,
// and the window's age by ClickHouse's clock; ok is false when the window has no refresh at
// all. The caller decides how old is too old. Up to TopKept scores come from the window's top
// list (one row); more, or a window refreshed before top lists existed, from ScoresTable.
func (v *Views) Precomputed(ctx context.Context, integrationID string, since time.Time, top int) (scores []Score, complete bool, age time.Duration, ok bool, err error) {
	if top > 0 && top <= TopKept {
		scores, complete, age, ok, err = v.precomputedTop(ctx, integrationID, since, top)
		if err != nil || ok {
			return scores, complete, age, ok, err
		}
	}
	return v.precomputedScores(ctx, integrationID, since, top)
}

// precomputedTop reads the newest top list of the window and returns its best top scores; ok
// is false when the window has none.
func (v *Views) precomputedTop(ctx context.Context, integrationID string, since time.Time, top int) (scores []Score, complete bool, age time.Duration, ok bool, err error) {
	var secs int64
	var all uint8
	var ids []string
	var unique, impressions []uint64
	err = v.conn.QueryRow(ctx, `SELECT toInt64(now()) - toInt64(computed_at), complete, scene_ids, unique_views, impressions
		FROM `+v.db+"."+TopsTable+` WHERE integration_id = ? AND since = toDate(?)
		ORDER BY computed_at DESC LIMIT 1`, integrationID, day(since)).Scan(&secs, &all, &ids, &unique, &impressions)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, 0, false, nil
	}
	if err != nil {
		return nil, false, 0, false, err
	}
	if len(unique) != len(ids) || len(impressions) != len(ids) {
		return nil, false, 0, false, fmt.Errorf("trending top list of %s since %s: %d ids, %d unique, %d impressions",
			integrationID, day(since), len(ids), len(unique), len(impressions))
	}
	n := min(top, len(ids))
	scores = make([]Score, n)
	for i := range n {
		scores[i] = Score{SceneID: ids[i], UniqueViews: int64(unique[i]), Impressions: int64(impressions[i])}
	}
	return scores, all == 1 && len(ids) <= top, time.Duration(secs) * time.Second, true, nil
}

// precomputedScores is Precomputed from ScoresTable: the window's rows folded by FINAL and
// ranked, which reads every active scene of the window.
func (v *Views) precomputedScores(ctx context.Context, integrationID string, since time.Time, top int) (scores []Score, complete bool, age time.Duration, ok bool, err error) {
	limit := ""
	if top > 0 {
		limit = " LIMIT " + strconv.Itoa(top+1) // and the heartbeat
	}
	// FINAL folds the rows of a scene written by successive refreshes (newest computed_at
	// wins) before the outer filter drops the scenes whose activity left the window. The
	// heartbeat row sorts first.
	rows, err := v.conn.Query(ctx, `SELECT scene_id, toInt64(unique_views), toInt64(impressions), toInt64(now()) - toInt64(computed_at)
		FROM (SELECT scene_id, unique_views, impressions, computed_at FROM `+v.db+"."+ScoresTable+` FINAL
			WHERE integration_id = ? AND since = toDate(?))
		WHERE scene_id = '' OR impressions > 0
		ORDER BY scene_id != '', unique_views * 3 + impressions DESC, scene_id`+limit, integrationID, day(since))
	if err != nil {
		return nil, false, 0, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var s Score
		var secs int64
		if err := rows.Scan(&s.SceneID, &s.UniqueViews, &s.Impressions, &secs); err != nil {
			return nil, false, 0, false, err
		}
		if s.SceneID == "" {
			age, ok = time.Duration(secs)*time.Second, true
			continue
		}
		scores = append(scores, s)
	}
	return scores, top <= 0 || len(scores) < top, age, ok, rows.Err()
}

// day formats t's UTC date for a Date parameter.
func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// refreshedWindow is what the leader last wrote for one window.
type refreshedWindow struct {
	parts  uint64
	scores map[string]Score
	// top is the window's best TopKept scores, best first, as TopsTable holds them.
	top []Score
}

// windowRefresher keeps the windows asked for precomputed. Only the streamer's leader runs one;
// two at once (a change of leader) would only repeat work, since every row carries its
// snapshot time and the newest wins.
type windowRefresher struct {
	views *Views
	// last holds, per integration|since, what was last written: the next refresh writes only
	// the differences. Windows not asked for any more are forgotten.
	last map[string]refreshedWindow
}

// refresh runs one round over every window asked for in the last DemandFor and returns the
// first error (the other windows are still refreshed).
func (r *windowRefresher) refresh(ctx context.Context) error {
	v := r.views
	l, err := v.layout(ctx)
	if err != nil {
		return err
	}
	rows, err := v.conn.Query(ctx, `SELECT integration_id, toInt64(window_days) FROM `+v.db+"."+DemandTable+`
		GROUP BY integration_id, window_days HAVING max(requested_at) >= now() - ?`, int64(DemandFor/time.Second))
	type want struct {
		integrationID string
		days          int64
	}
	wanted, err := collect(rows, err, func(r driver.Rows) (w want, err error) { return w, r.Scan(&w.integrationID, &w.days) })
	if err != nil {
		return err
	}
	next := make(map[string]refreshedWindow, len(wanted))
	var first error
	for _, w := range wanted {
		// A snapshot per window: its computed_at is when its own ranking started, not the
		// round's, so a round of many windows does not age the last of them.
		parts, now, err := v.partsSnapshot(ctx, l)
		if err != nil {
			return err
		}
		y, m, d := now.UTC().Date()
		since := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -int(w.days))
		key := w.integrationID + "|" + day(since)
		got, err := r.window(ctx, l, w.integrationID, since, parts, now, r.last[key])
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("window %s: %w", key, err))
			continue // not remembered: the next round writes it whole
		}
		next[key] = got
	}
	r.last = next
	return first
}

// window refreshes one window from prev (zero when it has none) and returns what it wrote.
func (r *windowRefresher) window(ctx context.Context, l layout, integrationID string, since time.Time, parts uint64, now time.Time, prev refreshedWindow) (refreshedWindow, error) {
	v := r.views
	cur := prev
	var changed []Score
	// parts 0 means the snapshot cannot tell (a cluster whose other shards it cannot see).
	if prev.scores == nil || parts == 0 || parts != prev.parts {
		scores, err := v.WindowScores(ctx, integrationID, since)
		if err != nil {
			return prev, err
		}
		cur = refreshedWindow{parts: parts, scores: make(map[string]Score, len(scores)), top: scores[:min(len(scores), TopKept)]}
		for _, s := range scores {
			cur.scores[s.SceneID] = s
			if prev.scores[s.SceneID] != s {
				changed = append(changed, s)
			}
		}
		for id := range prev.scores {
			if _, ok := cur.scores[id]; !ok {
				changed = append(changed, Score{SceneID: id}) // left the window: written as zero
			}
		}
	}
	batch, err := v.conn.PrepareBatch(insertContext(ctx, l), "INSERT INTO "+v.db+"."+ScoresTable+" (integration_id, since, scene_id, unique_views, impressions, computed_at)")
	if err != nil {
		return prev, err
	}
	// One INSERT, one partition (the window's month): the changed rows and the heartbeat land
	// together in one part.
	for _, s := range append(changed, Score{}) {
		if err := batch.Append(integrationID, since, s.SceneID, uint64(s.UniqueViews), uint64(s.Impressions), now); err != nil {
			_ = batch.Abort()
			return prev, err
		}
	}
	if err := batch.Send(); err != nil {
		return prev, err
	}
	// Then the top list, rewritten every round: its computed_at is the window's freshness for
	// the readers of TopsTable, as the heartbeat row is for ScoresTable's. Written after the
	// scores, so a reader sent to ScoresTable by an incomplete list finds them at least as new.
	if err := v.writeTop(ctx, l, integrationID, since, now, cur.top, len(cur.scores) <= TopKept); err != nil {
		return prev, err
	}
	return cur, nil
}

// writeTop writes one TopsTable row: the window's best scores (best first) as of now.
func (v *Views) writeTop(ctx context.Context, l layout, integrationID string, since, now time.Time, top []Score, complete bool) error {
	ids := make([]string, len(top))
	unique, impressions := make([]uint64, len(top)), make([]uint64, len(top))
	for i, s := range top {
		ids[i], unique[i], impressions[i] = s.SceneID, uint64(s.UniqueViews), uint64(s.Impressions)
	}
	batch, err := v.conn.PrepareBatch(insertContext(ctx, l), "INSERT INTO "+v.db+"."+TopsTable+
		" (integration_id, since, computed_at, complete, scene_ids, unique_views, impressions)")
	if err != nil {
		return err
	}
	var all uint8
	if complete {
		all = 1
	}
	if err := batch.Append(integrationID, since, now, all, ids, unique, impressions); err != nil {
		_ = batch.Abort()
		return err
	}
	return batch.Send()
}

// partsSnapshot returns a hash of the names of the daily rollup's and the deleted scenes'
// active parts (any insert, merge or mutation renames them: a view, or a deletion that takes a
// scene out of every window) and ClickHouse's clock. In a cluster it returns 0 for the
// hash (unknown), since the other shards' parts are not in this server's system.parts.
func (v *Views) partsSnapshot(ctx context.Context, l layout) (uint64, time.Time, error) {
	var parts uint64
	var now time.Time
	err := v.conn.QueryRow(ctx, `SELECT cityHash64(arrayStringConcat(arraySort(groupArray(name)), ',')), now()
		FROM system.parts WHERE database = ? AND table IN (?, ?) AND active`, v.db, DailyTable, DeletedTable).Scan(&parts, &now)
	if l.cluster != "" {
		parts = 0
	}
	return parts, now, err
}

// insertContext is ctx for an insert: in a cluster the Distributed table then writes to the
// shards before the insert returns (insert_distributed_sync), so what was inserted is what a
// read sees next: the streamer's exactly-once check reads the event ids back, and a window's
// heartbeat must not be seen before the scores it vouches for.
func insertContext(ctx context.Context, l layout) context.Context {
	if l.cluster == "" {
		return ctx
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_distributed_sync": 1}))
}

// layout returns where the schema lives, read once from ClickHouse itself: in the cluster
// variant EventsTable is a Distributed table whose first engine argument names the cluster.
// Mutations and partition drops need it (they address the local tables ON CLUSTER).
func (v *Views) layout(ctx context.Context) (layout, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lay != nil {
		return *v.lay, nil
	}
	var engine, full string
	err := v.conn.QueryRow(ctx, "SELECT engine, engine_full FROM system.tables WHERE database = ? AND name = ?", v.db, EventsTable).
		Scan(&engine, &full)
	if err != nil {
		return layout{}, fmt.Errorf("read the analytics schema's layout: %w", err)
	}
	cluster, err := clusterOf(engine, full)
	if err != nil {
		return layout{}, err
	}
	l := layout{db: v.db, cluster: cluster}
	v.lay = &l
	return l, nil
}

// clusterOf returns the cluster a table of the given engine (system.tables engine and
// engine_full) is distributed over: the first argument of Distributed(…), empty for any other
// engine.
func clusterOf(engine, full string) (string, error) {
	if engine != "Distributed" {
		return "", nil
	}
	args, _ := strings.CutPrefix(full, "Distributed(")
	name, _, _ := strings.Cut(args, ",")
	name = strings.Trim(strings.TrimSpace(name), "'`\"")
	if !validDB.MatchString(name) {
		return "", fmt.Errorf("unexpected cluster name in %s's engine %q", EventsTable, full)
	}
	return name, nil
}
