package analytics

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// NamesEvery is how often the name sync applies the scene change notices it has heard (and,
// every integrationsEvery, compares the integrations): a renamed scene shows its new title in
// ClickHouse about this long after the rename commits.
const NamesEvery = 500 * time.Millisecond

// integrationsEvery is how often the name sync compares every integration's names with what it
// last wrote: integrations are few and change rarely, and no notice announces them.
const integrationsEvery = 5 * time.Second

// namesChunk bounds the scene ids of one read: at about 27 bytes a quoted id, well under
// ClickHouse's default max_query_size (256 KiB).
const namesChunk = 2000

// NameSync keeps the scene and integration names analysts join views with (SceneNamesTable,
// IntegrationNamesTable) in step with Postgres, so nobody needs the product database to put a
// title on a scene id. The view streamer's leader runs it (Streamer.Names):
//
//   - every scene change notice (pgnotify.ScenesChannel: commit, rename, clone, delete, ...) names
//     a scene; every NamesEvery the heard scenes are read from Postgres and those whose title
//     differs from ClickHouse's are written, and those gone from Postgres get a tombstone, so a
//     deleted scene's name leaves scene_names_visible within a second (its row itself goes
//     with the deleted scenes' daily compaction);
//   - each time the notices' connection is (re)established, when a notice may have been
//     missed, every scene is compared page by page, both ways;
//   - the integrations (product slug, account and account name) are compared every
//     integrationsEvery.
//
// Rows only grow newer (ReplacingMergeTree by version, the Postgres row's updated_at, or the
// tombstone's time), so a second leader during a hand-over only repeats work.
type NameSync struct {
	// Pool is the product database's pool.
	Pool *pgxpool.Pool
	// Views is the ClickHouse store the names are written to.
	Views *Views
	Log   *slog.Logger
	// Listen hears the scene change notices until ctx ends: onConnect each time its connection
	// is (re)established, onNotify with each payload ("<integrationId>:<sceneId>"). The worker
	// wires internal/db's Listen here (analytics stays below internal/db).
	Listen func(ctx context.Context, onConnect func(), onNotify func(payload string))

	mu      sync.Mutex
	heard   map[string]bool
	full    bool
	written map[string]IntegrationName
}

// SceneName is a scene's title as ClickHouse holds it.
type SceneName struct {
	IntegrationID, SceneID, Title string
	CreatedAt                     time.Time
	// Deleted marks a tombstone: the scene no longer exists.
	Deleted bool
	// Version orders the rows of one scene: the newest wins.
	Version uint64
}

// IntegrationName is an integration's names as ClickHouse holds them.
type IntegrationName struct {
	IntegrationID, ProductSlug, AccountID, AccountName string
	Version                                            uint64
}

// run keeps the names in step until ctx ends (the leadership with it).
func (n *NameSync) run(ctx context.Context) {
	n.mu.Lock()
	n.heard, n.full, n.written = map[string]bool{}, true, map[string]IntegrationName{}
	n.mu.Unlock()
	listened := make(chan struct{})
	go func() {
		defer close(listened)
		n.Listen(ctx, n.connected, n.notified)
	}()
	defer func() { <-listened }()
	var lastIntegrations time.Time
	rounds(ctx, NamesEvery, n.Log, "scene names: sync failed; retrying", "scene names: syncing again", func(ctx context.Context) error {
		if time.Since(lastIntegrations) >= integrationsEvery {
			if err := n.syncIntegrations(ctx); err != nil {
				return err
			}
			lastIntegrations = time.Now()
		}
		return n.syncScenes(ctx)
	})
}

// connected asks for a whole comparison: notices sent while nobody listened are lost.
func (n *NameSync) connected() {
	n.mu.Lock()
	n.full = true
	n.mu.Unlock()
}

// notified records the scene a notice names.
func (n *NameSync) notified(payload string) {
	_, id, ok := strings.Cut(payload, ":")
	if !ok || !validSceneID(id) {
		return
	}
	n.mu.Lock()
	n.heard[id] = true
	n.mu.Unlock()
}

// syncScenes applies the notices heard (or compares every scene once a whole comparison is
// due). On failure the work stays due and is retried on the next round.
func (n *NameSync) syncScenes(ctx context.Context) error {
	n.mu.Lock()
	full, heard := n.full, n.heard
	n.full, n.heard = false, map[string]bool{}
	n.mu.Unlock()
	err := n.compareHeard(ctx, heard)
	if err == nil && full {
		err = n.compareAll(ctx)
	}
	if err != nil {
		n.mu.Lock()
		n.full = n.full || full
		for id := range heard {
			n.heard[id] = true
		}
		n.mu.Unlock()
	}
	return err
}

// compareHeard writes the heard scenes whose names changed.
func (n *NameSync) compareHeard(ctx context.Context, heard map[string]bool) error {
	ids := make([]string, 0, len(heard))
	for id := range heard {
		ids = append(ids, id)
	}
	for start := 0; start < len(ids); start += namesChunk {
		chunk := ids[start:min(start+namesChunk, len(ids))]
		rows, err := n.Pool.Query(ctx, `SELECT id, integration_id, title, created_at, updated_at FROM scenes WHERE id = ANY($1)`, chunk)
		live, err := collectScenes(rows, err)
		if err != nil {
			return err
		}
		stored, err := n.Views.sceneNames(ctx, "scene_id IN ("+quoteIDs(chunk)+")")
		if err != nil {
			return err
		}
		if err := n.Views.writeSceneNames(ctx, changedNames(chunk, live, stored)); err != nil {
			return err
		}
	}
	return nil
}

// compareAll compares every scene, a page of Postgres ids at a time against the same range of
// ClickHouse's, so a name whose scene is gone is found too.
func (n *NameSync) compareAll(ctx context.Context) error {
	after := ""
	for {
		rows, err := n.Pool.Query(ctx, `SELECT id, integration_id, title, created_at, updated_at FROM scenes
			WHERE id > $1 ORDER BY id LIMIT $2`, after, namesChunk)
		live, err := collectScenes(rows, err)
		if err != nil {
			return err
		}
		ids := make([]string, 0, len(live))
		last := ""
		for id := range live {
			ids = append(ids, id)
			last = max(last, id)
		}
		// The last page reaches to the end of ClickHouse's ids too.
		where, args := "scene_id > ?", []any{after}
		if len(live) == namesChunk {
			where, args = where+" AND scene_id <= ?", append(args, last)
		}
		stored, err := n.Views.sceneNames(ctx, where, args...)
		if err != nil {
			return err
		}
		for id := range stored {
			if _, ok := live[id]; !ok {
				ids = append(ids, id)
			}
		}
		if err := n.Views.writeSceneNames(ctx, changedNames(ids, live, stored)); err != nil {
			return err
		}
		if len(live) < namesChunk {
			return nil
		}
		after = last
	}
}

// changedNames is what to write for ids: a live scene whose title ClickHouse lacks or holds
// otherwise, and a tombstone for a scene gone from Postgres whose name ClickHouse still shows.
func changedNames(ids []string, live, stored map[string]SceneName) []SceneName {
	var out []SceneName
	now := uint64(time.Now().UnixMicro())
	for _, id := range ids {
		l, isLive := live[id]
		s, isStored := stored[id]
		switch {
		case isLive && (!isStored || s.Deleted || s.Title != l.Title):
			out = append(out, l)
		case !isLive && isStored && !s.Deleted:
			// Newer than any version the scene's rows had: its updated_at was before now.
			out = append(out, SceneName{IntegrationID: s.IntegrationID, SceneID: id, CreatedAt: s.CreatedAt,
				Deleted: true, Version: max(now, s.Version+1)})
		}
	}
	return out
}

// collectScenes reads scene rows (id, integration_id, title, created_at, updated_at) by id.
func collectScenes(rows pgx.Rows, err error) (map[string]SceneName, error) {
	if err != nil {
		return nil, err
	}
	out := map[string]SceneName{}
	var s SceneName
	var updated time.Time
	_, err = pgx.ForEachRow(rows, []any{&s.SceneID, &s.IntegrationID, &s.Title, &s.CreatedAt, &updated}, func() error {
		s.Version = uint64(updated.UnixMicro())
		s.CreatedAt = s.CreatedAt.UTC()
		out[s.SceneID] = s
		return nil
	})
	return out, err
}

// quoteIDs renders scene ids as a SQL list; only the 24-hex ids the product makes get here.
func quoteIDs(ids []string) string {
	quoted := make([]string, 0, len(ids))
	for _, id := range ids {
		if validSceneID(id) {
			quoted = append(quoted, "'"+id+"'")
		}
	}
	if len(quoted) == 0 {
		return "''"
	}
	return strings.Join(quoted, ",")
}

// syncIntegrations writes the integrations whose names changed since it last wrote them (all
// of them the first time in a leadership).
func (n *NameSync) syncIntegrations(ctx context.Context) error {
	rows, err := n.Pool.Query(ctx, `SELECT i.id, i.product_slug, a.id, a.name, greatest(i.updated_at, a.updated_at)
		FROM integrations i JOIN accounts a ON a.id = i.account_id`)
	if err != nil {
		return err
	}
	var changed []IntegrationName
	var in IntegrationName
	var updated time.Time
	if _, err := pgx.ForEachRow(rows, []any{&in.IntegrationID, &in.ProductSlug, &in.AccountID, &in.AccountName, &updated}, func() error {
		in.Version = uint64(updated.UnixMicro())
		prev, ok := n.written[in.IntegrationID]
		if !ok || prev.ProductSlug != in.ProductSlug || prev.AccountName != in.AccountName || prev.AccountID != in.AccountID {
			changed = append(changed, in)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := n.Views.writeIntegrationNames(ctx, changed); err != nil {
		return err
	}
	for _, in := range changed {
		n.written[in.IntegrationID] = in
	}
	return nil
}

// sceneNames reads the newest name row of every scene matching where (a condition on scene_id
// with args, or an IN list of validated ids), tombstones included.
func (v *Views) sceneNames(ctx context.Context, where string, args ...any) (map[string]SceneName, error) {
	rows, err := v.conn.Query(ctx, `SELECT scene_id, argMax(integration_id, version), argMax(title, version),
		argMax(created_at, version), argMax(deleted, version), max(version)
		FROM `+v.db+"."+SceneNamesTable+` WHERE `+where+` GROUP BY scene_id`, args...)
	names, err := collect(rows, err, func(r driver.Rows) (s SceneName, err error) {
		var deleted uint8
		err = r.Scan(&s.SceneID, &s.IntegrationID, &s.Title, &s.CreatedAt, &deleted, &s.Version)
		s.Deleted = deleted == 1
		return s, err
	})
	out := make(map[string]SceneName, len(names))
	for _, s := range names {
		out[s.SceneID] = s
	}
	return out, err
}

// writeSceneNames inserts the rows as one batch.
func (v *Views) writeSceneNames(ctx context.Context, names []SceneName) error {
	return v.insertRows(ctx, SceneNamesTable, "integration_id, scene_id, title, created_at, deleted, version", len(names), func(i int) []any {
		s := names[i]
		var deleted uint8
		if s.Deleted {
			deleted = 1
		}
		return []any{s.IntegrationID, s.SceneID, s.Title, s.CreatedAt.UTC(), deleted, s.Version}
	})
}

// writeIntegrationNames inserts the rows as one batch.
func (v *Views) writeIntegrationNames(ctx context.Context, names []IntegrationName) error {
	return v.insertRows(ctx, IntegrationNamesTable, "integration_id, product_slug, account_id, account_name, version", len(names), func(i int) []any {
		in := names[i]
		return []any{in.IntegrationID, in.ProductSlug, in.AccountID, in.AccountName, in.Version}
	})
}
