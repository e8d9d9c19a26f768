package analytics

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Views is the ClickHouse view store: it inserts view events, answers windowed scores for
// trending, marks deleted scenes and removes their records, and drops expired partitions.
type Views struct {
	conn driver.Conn
	db   string

	mu  sync.Mutex
	lay *layout // read once by layout
}

// NewViews returns the view store of database db over conn.
func NewViews(conn driver.Conn, db string) (*Views, error) {
	if !validDB.MatchString(db) {
		return nil, fmt.Errorf("invalid clickhouse database name %q", db)
	}
	return &Views{conn: conn, db: db}, nil
}

// OpenViews connects to ClickHouse (Open) and returns the view store of database db; Close
// releases the connection.
func OpenViews(ctx context.Context, addr, db string) (*Views, error) {
	if !validDB.MatchString(db) {
		return nil, fmt.Errorf("invalid clickhouse database name %q", db)
	}
	conn, err := Open(ctx, addr, db)
	if err != nil {
		return nil, err
	}
	return &Views{conn: conn, db: db}, nil
}

// Close releases the connection.
func (v *Views) Close() error { return v.conn.Close() }

// Ping checks ClickHouse answers.
func (v *Views) Ping(ctx context.Context) error { return v.conn.Ping(ctx) }

// Event is one accepted view.
type Event struct {
	// ID is the Postgres outbox id: unique per accepted view, the deduplication key.
	ID            int64
	IntegrationID string
	SceneID       string
	VisitorID     string
	ViewedAt      time.Time
}

// Insert writes events as one batch. With dedupe it first drops the events whose id is already
// stored: an earlier attempt may have landed even though it reported an error (a timeout, a
// server that died after writing), and retrying it blindly would count those views twice.
// Insert returns how many events it wrote.
func (v *Views) Insert(ctx context.Context, events []Event, dedupe bool) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	if dedupe {
		present, err := v.present(ctx, events)
		if err != nil {
			return 0, err
		}
		kept := events[:0:0]
		for _, e := range events {
			if !present[uint64(e.ID)] {
				kept = append(kept, e)
			}
		}
		events = kept
		if len(events) == 0 {
			return 0, nil
		}
	}
	l, err := v.layout(ctx)
	if err != nil {
		return 0, err
	}
	batch, err := v.conn.PrepareBatch(insertContext(ctx, l), "INSERT INTO "+v.db+"."+EventsTable+" (event_id, integration_id, scene_id, visitor_id, viewed_at)")
	if err != nil {
		return 0, err
	}
	for _, e := range events {
		if err := batch.Append(uint64(e.ID), e.IntegrationID, e.SceneID, e.VisitorID, e.ViewedAt.UTC()); err != nil {
			_ = batch.Abort()
			return 0, err
		}
	}
	if err := batch.Send(); err != nil {
		return 0, err
	}
	return len(events), nil
}

// present returns which of the events' ids are already stored, reading only the months they
// fall in (partition pruning keeps the check cheap).
func (v *Views) present(ctx context.Context, events []Event) (map[uint64]bool, error) {
	ids := make([]string, len(events))
	months := map[string]bool{}
	for i, e := range events {
		ids[i] = strconv.FormatInt(e.ID, 10)
		months[e.ViewedAt.UTC().Format("200601")] = true
	}
	monthList := make([]string, 0, len(months))
	for m := range months {
		monthList = append(monthList, m)
	}
	sort.Strings(monthList)
	// Ids and months are integers formatted here, never client text.
	rows, err := v.conn.Query(ctx, "SELECT event_id FROM "+v.db+"."+EventsTable+
		" WHERE toYYYYMM(viewed_at) IN ("+strings.Join(monthList, ",")+") AND event_id IN ("+strings.Join(ids, ",")+")")
	stored, err := collect(rows, err, func(r driver.Rows) (id uint64, err error) { return id, r.Scan(&id) })
	out := make(map[uint64]bool, len(stored))
	for _, id := range stored {
		out[id] = true
	}
	return out, err
}

// collect reads every row of a query (rows, err as Query returned them) with scan and closes
// the rows.
func collect[T any](rows driver.Rows, err error, scan func(driver.Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Score is one scene's activity in a trending window.
type Score struct {
	SceneID     string
	UniqueViews int64
	Impressions int64
}

// Value is the trending score: uniqueViews × 3 + impressions (spec).
func (s Score) Value() int64 { return s.UniqueViews*3 + s.Impressions }

// WindowScores returns every scene of the integration with views on or after the UTC day
// since, best score first (then scene id, for a stable order). It reads the daily rollup: the
// window always starts at a UTC midnight, so whole days are exact.
func (v *Views) WindowScores(ctx context.Context, integrationID string, since time.Time) ([]Score, error) {
	rows, err := v.conn.Query(ctx, `SELECT scene_id, toInt64(uniqMerge(visitors)) AS u, toInt64(countMerge(impressions)) AS c
		FROM `+v.db+"."+DailyTable+`
		WHERE integration_id = ? AND day >= toDate(?) AND `+visibleScenes(v.db)+`
		GROUP BY scene_id
		ORDER BY u * 3 + c DESC, scene_id`, integrationID, since.UTC().Format("2006-01-02"))
	return collect(rows, err, func(r driver.Rows) (s Score, err error) {
		return s, r.Scan(&s.SceneID, &s.UniqueViews, &s.Impressions)
	})
}

// MarkDeleted records the scenes as deleted (DeletedTable): from then on every query over
// views leaves their rows out, and the view-retention run removes the rows (CompactDeleted).
// It is one insert, replicated like any other, never a mutation; marking a scene again is
// harmless, so a retry is safe.
func (v *Views) MarkDeleted(ctx context.Context, sceneIDs []string) error {
	if len(sceneIDs) == 0 {
		return nil
	}
	for _, id := range sceneIDs {
		if !validSceneID(id) {
			return fmt.Errorf("invalid scene id %q", id)
		}
	}
	now := time.Now().UTC()
	return v.insertRows(ctx, DeletedTable, "scene_id, deleted_at", len(sceneIDs), func(i int) []any { return []any{sceneIDs[i], now} })
}

// insertRows inserts n rows (row(i) is the i-th row's values, in the order of columns) into
// the table that holds the rows on the server (the table itself for one replicated to every
// node), as one batch; nothing for n = 0.
func (v *Views) insertRows(ctx context.Context, table, columns string, n int, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	l, err := v.layout(ctx)
	if err != nil {
		return err
	}
	batch, err := v.conn.PrepareBatch(ctx, "INSERT INTO "+l.local(table)+" ("+columns+")")
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := batch.Append(row(i)...); err != nil {
			_ = batch.Abort()
			return err
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	return nil
}

// compactChunk bounds the scene ids of one ALTER … DELETE statement: at about 27 bytes an id,
// well under ClickHouse's default max_query_size (256 KiB).
const compactChunk = 5000

// CompactDeleted removes the rows, raw, rolled up, precomputed and names, of every deleted scene that
// still has any, with one ALTER TABLE … DELETE per table (and per compactChunk scenes) for
// all of them at once: the batch that replaces a mutation per deleted scene. It returns how
// many scenes it found. Mutations run in the background (system.mutations); the call returns
// once they are queued, and running it again is harmless.
func (v *Views) CompactDeleted(ctx context.Context) (int, error) {
	l, err := v.layout(ctx)
	if err != nil {
		return 0, err
	}
	deleted := "IN " + deletedScenes(v.db)
	rows, err := v.conn.Query(ctx, "SELECT DISTINCT scene_id FROM (SELECT scene_id FROM "+v.db+"."+DailyTable+" WHERE scene_id "+deleted+
		" UNION ALL SELECT scene_id FROM "+v.db+"."+ScoresTable+" WHERE scene_id "+deleted+
		" UNION ALL SELECT scene_id FROM "+v.db+"."+SceneNamesTable+" WHERE scene_id "+deleted+")")
	ids, err := collect(rows, err, func(r driver.Rows) (id string, err error) { return id, r.Scan(&id) })
	if err != nil {
		return 0, err
	}
	for start := 0; start < len(ids); start += compactChunk {
		if err := v.deleteRows(ctx, l, ids[start:min(start+compactChunk, len(ids))]); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// deleteRows queues the mutations that remove the scenes' rows from every view table and their
// names, on every shard in a cluster (18.16 has no lightweight DELETE).
func (v *Views) deleteRows(ctx context.Context, l layout, sceneIDs []string) error {
	quoted := make([]string, len(sceneIDs))
	for i, id := range sceneIDs {
		// ALTER … DELETE takes no parameters: ids are spliced in only after this check.
		if !validSceneID(id) {
			return fmt.Errorf("invalid scene id %q", id)
		}
		quoted[i] = "'" + id + "'"
	}
	in := strings.Join(quoted, ",")
	for _, table := range []string{EventsTable, DailyTable, ScoresTable, SceneNamesTable} {
		if err := v.conn.Exec(ctx, "ALTER TABLE "+l.local(table)+l.onCluster()+" DELETE WHERE scene_id IN ("+in+")"); err != nil {
			return fmt.Errorf("delete views from %s: %w", table, err)
		}
	}
	// A top list naming one of them goes whole: the window's next refresh writes it anew, and
	// meanwhile a reader ranks from ScoresTable or afresh.
	if err := v.conn.Exec(ctx, "ALTER TABLE "+l.local(TopsTable)+l.onCluster()+" DELETE WHERE hasAny(scene_ids, ["+in+"])"); err != nil {
		return fmt.Errorf("delete views from %s: %w", TopsTable, err)
	}
	return nil
}

// SceneIDs lists every scene that has view records and is not yet marked deleted (from the
// daily rollup, which holds a row per scene and day with views), and every scene whose name
// the name sync found gone (a tombstone) but is not yet marked, so a sweep can find the records
// of scenes that no longer exist, and the compaction then removes them.
func (v *Views) SceneIDs(ctx context.Context) ([]string, error) {
	rows, err := v.conn.Query(ctx, "SELECT DISTINCT scene_id FROM (SELECT scene_id FROM "+v.db+"."+DailyTable+" WHERE "+visibleScenes(v.db)+
		" UNION ALL SELECT scene_id FROM "+v.db+"."+SceneNamesTable+" WHERE deleted = 1 AND "+visibleScenes(v.db)+")")
	return collect(rows, err, func(r driver.Rows) (id string, err error) { return id, r.Scan(&id) })
}

// validSceneID accepts the 24-hex scene ids: what the product deletes, and all an ALTER …
// DELETE statement splices in.
func validSceneID(id string) bool {
	if len(id) != 24 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// derivedKeep is how long the precomputed trending windows and the record of which windows
// were asked for are kept: no window reaches back further than 90 days, so older ones are
// never read again.
const derivedKeep = 100 * 24 * time.Hour

// DropPartitionsBefore drops, from the raw and rollup tables and the deleted scenes (whose views
// have expired by then), every monthly partition whose whole month lies before cutoff (the day after its last day is at or before cutoff), and
// from the precomputed trending tables every month wholly older than derivedKeep (or cutoff,
// if later), and returns the dropped partitions as "table:YYYYMM". A month still partly within
// the retention stays until all of it has expired. Dropping is idempotent; in a cluster it
// drops on every shard.
func (v *Views) DropPartitionsBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	l, err := v.layout(ctx)
	if err != nil {
		return nil, err
	}
	type part struct{ table, partition string }
	tables := []string{EventsTable, DailyTable, ScoresTable, DemandTable, TopsTable, DeletedTable}
	args := []any{v.db}
	for _, t := range tables {
		args = append(args, strings.TrimPrefix(l.local(t), v.db+"."))
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(tables)), ", ")
	// A node's system.parts lists only its own shard's parts: in a cluster, ask one replica of
	// every shard, or a month held only by the other shards is never dropped.
	from := "system.parts"
	if l.cluster != "" {
		from = "cluster('" + l.cluster + "', system, parts)"
	}
	rows, err := v.conn.Query(ctx, `SELECT DISTINCT table, partition FROM `+from+`
		WHERE database = ? AND table IN (`+in+`) AND active ORDER BY table, partition`, args...)
	parts, err := collect(rows, err, func(r driver.Rows) (p part, err error) { return p, r.Scan(&p.table, &p.partition) })
	if err != nil {
		return nil, err
	}
	derivedCutoff := time.Now().Add(-derivedKeep)
	if derivedCutoff.Before(cutoff) {
		derivedCutoff = cutoff
	}
	var dropped []string
	for _, p := range parts {
		month, err := time.Parse("200601", p.partition)
		if err != nil {
			continue // not one of ours: every partition key here is toYYYYMM
		}
		name := strings.TrimSuffix(p.table, LocalSuffix)
		before := cutoff
		if name == ScoresTable || name == DemandTable || name == TopsTable {
			before = derivedCutoff
		}
		if month.AddDate(0, 1, 0).After(before.UTC()) {
			continue
		}
		if err := v.conn.Exec(ctx, "ALTER TABLE "+v.db+"."+p.table+l.onCluster()+" DROP PARTITION "+month.Format("200601")); err != nil {
			return dropped, fmt.Errorf("drop partition %s of %s: %w", p.partition, p.table, err)
		}
		dropped = append(dropped, name+":"+p.partition)
	}
	return dropped, nil
}

// SceneDay is one scene's views on one UTC day.
type SceneDay struct {
	Day         time.Time
	Impressions int64
	UniqueViews int64
}

// SceneWindow returns a scene's views per UTC day from since (a UTC midnight) on, only the days
// that have any, in day order, and the window's totals: impressions summed, unique viewers
// merged over the whole window (a visitor seen on two days counts once), not summed per day.
// It reads the daily rollup, as trending does, in one query (WITH TOTALS), so the days and the
// totals are the same snapshot even while the streamer inserts.
func (v *Views) SceneWindow(ctx context.Context, integrationID, sceneID string, since time.Time) (days []SceneDay, total SceneDay, err error) {
	rows, err := v.conn.Query(ctx, `SELECT day, toInt64(countMerge(impressions)) AS c, toInt64(uniqMerge(visitors)) AS u
		FROM `+v.db+"."+DailyTable+`
		WHERE integration_id = ? AND scene_id = ? AND day >= toDate(?) AND `+visibleScenes(v.db)+`
		GROUP BY day WITH TOTALS
		ORDER BY day`, integrationID, sceneID, day(since))
	days, err = collect(rows, err, func(r driver.Rows) (d SceneDay, err error) {
		return d, r.Scan(&d.Day, &d.Impressions, &d.UniqueViews)
	})
	if err != nil {
		return nil, total, err
	}
	var none time.Time // the totals row's day is empty
	if err := rows.Totals(&none, &total.Impressions, &total.UniqueViews); err != nil {
		return nil, total, fmt.Errorf("window totals: %w", err)
	}
	return days, total, nil
}
