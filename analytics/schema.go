package analytics

import (
	"fmt"
	"strings"
)

// Table names of the analytics schema (documented for analysts in README.md). In the cluster
// variant each name is the Distributed table that reads and writes go through, over the
// replicated table name+LocalSuffix on every shard.
const (
	// EventsTable holds one row per accepted view, partitioned by month.
	EventsTable = "view_events"
	// DailyTable is the per-day, per-scene rollup trending reads.
	DailyTable = "scene_views_daily"
	// dailyView feeds DailyTable from every insert into EventsTable.
	dailyView = "scene_views_daily_mv"
	// ScoresTable holds the precomputed trending windows: per integration and window start, every
	// active scene's unique views and impressions, kept fresh by the view streamer's leader.
	ScoresTable = "trending_scores"
	// DemandTable records which trending windows were asked for recently, so the leader knows
	// which ones to keep fresh.
	DemandTable = "trending_demand"
	// TopsTable holds each precomputed window's best TopKept scores as one row of arrays,
	// rewritten by every refresh: what a trending request reads, one row instead of every
	// active scene of ScoresTable.
	TopsTable = "trending_tops"
	// DeletedTable lists the deleted scenes: every query over views leaves their rows out (see
	// visibleScenes), so a deletion is one insert here, and the view-retention run removes their
	// rows in one batch (Views.CompactDeleted) instead of a mutation per deleted scene. In a
	// cluster every node holds all of it (replicated, not sharded), so a shard's part of a
	// query over a Distributed table filters by its own copy.
	DeletedTable = "deleted_scenes"
	// SceneNamesTable holds every scene's title, synced from Postgres (NameSync), so analysts
	// put names on scene ids without the product database; a deleted scene gets a tombstone
	// row, and its rows go with the deleted scenes' compaction.
	SceneNamesTable = "scene_names"
	// IntegrationNamesTable holds every integration's product slug and account name, synced
	// from Postgres (NameSync).
	IntegrationNamesTable = "integration_names"
	// VisibleSceneNamesView is the current title of every live scene: what analysts join.
	VisibleSceneNamesView = "scene_names_visible"
	// VisibleIntegrationNamesView is the current names of every integration: what analysts join.
	VisibleIntegrationNamesView = "integration_names_visible"
	// VisibleEventsView is EventsTable without the rows of deleted scenes: what analysts query.
	VisibleEventsView = "view_events_visible"
	// VisibleDailyView is DailyTable without the rows of deleted scenes: what analysts query.
	VisibleDailyView = "scene_views_daily_visible"
	// migrationsTable records the applied schema versions.
	migrationsTable = "schema_migrations"
	// LocalSuffix names the per-shard replicated table under a Distributed table (cluster variant).
	LocalSuffix = "_local"
)

// table is one MergeTree-family table. It is the single definition both schema variants are
// rendered from: a plain table on one server, or a Replicated table on every shard plus a
// Distributed table over them in a cluster.
type table struct {
	name    string
	columns []string
	// engine is the MergeTree-family engine without the Replicated prefix; params are its
	// arguments (ReplacingMergeTree's version column), empty for none.
	engine, params string
	partitionBy    string
	orderBy        string
	// shardBy is the sharding key of the Distributed table. It keeps together the rows a merge
	// must fold or a query must see on one shard (an event's duplicates; a window's scores).
	shardBy string
	// everyNode, in a cluster, replicates the table whole to every node under its own name
	// instead of sharding it behind a Distributed table: a small table that the queries of
	// every shard read locally (a subquery of a query over a Distributed table runs on each
	// shard against that shard's tables).
	everyNode bool
}

// matView is a materialized view that writes what it selects from one table into another.
// query selects FROM {from}; in a cluster both ends are the local tables, so each shard rolls
// up its own events.
type matView struct {
	name, from, to, query string
}

// plainView is a (non-materialized) view: a saved query over the tables under their own names,
// the Distributed ones in a cluster. query names the database as {db}.
type plainView struct {
	name, query string
}

// migration is one version of the ClickHouse schema.
type migration struct {
	version uint32
	name    string
	tables  []table
	views   []matView
	// plain views are created after the tables and materialized views.
	plain []plainView
}

// layout is where the schema lives: db on one server (cluster empty), or db on every node of
// the named cluster (remote_servers in the server config, with {shard} and {replica} macros).
type layout struct {
	db, cluster string
}

// onCluster is the ON CLUSTER clause of DDL in a cluster, empty on one server.
func (l layout) onCluster() string {
	if l.cluster == "" {
		return ""
	}
	return " ON CLUSTER " + l.cluster
}

// local is the table that holds a table's rows on the server a statement runs on: the table
// itself on one server (and for a table replicated to every node), its replicated _local
// table in a cluster. Mutations and partition drops address it, since a Distributed table
// holds no data.
func (l layout) local(name string) string {
	if l.cluster == "" || everyNode(name) {
		return l.db + "." + name
	}
	return l.db + "." + name + LocalSuffix
}

// everyNode reports whether the schema's table name is replicated whole to every node.
func everyNode(name string) bool {
	for _, m := range migrations {
		for _, t := range m.tables {
			if t.name == name {
				return t.everyNode
			}
		}
	}
	return false
}

// statements renders the version's DDL for the layout. Every statement is idempotent (IF NOT
// EXISTS).
func (m migration) statements(l layout) []string {
	var out []string
	for _, t := range m.tables {
		out = append(out, t.ddl(l)...)
	}
	for _, v := range m.views {
		out = append(out, v.ddl(l))
	}
	for _, v := range m.plain {
		out = append(out, v.ddl(l))
	}
	return out
}

// ddl creates the table: on one server the table itself; in a cluster the replicated local
// table on every node (ZooKeeper path per shard, replica from the macros) and the Distributed
// table of the same name over it.
//
// A table replicated to every node (everyNode) keeps its own name and one ZooKeeper path for
// the whole cluster, so every node is a replica of it ({replica} is unique in the cluster).
func (t table) ddl(l layout) []string {
	engine, params := t.engine, t.params
	if l.cluster != "" {
		engine = "Replicated" + engine
		zk := fmt.Sprintf("'/clickhouse/tables/{shard}/%s/%s%s', '{replica}'", l.db, t.name, LocalSuffix)
		if t.everyNode {
			zk = fmt.Sprintf("'/clickhouse/tables/all/%s/%s', '{replica}'", l.db, t.name)
		}
		params = strings.TrimSuffix(zk+", "+params, ", ")
	}
	create := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s%s (\n\t%s\n) ENGINE = %s(%s)\nPARTITION BY %s\nORDER BY %s",
		l.local(t.name), l.onCluster(), strings.Join(t.columns, ",\n\t"), engine, params, t.partitionBy, t.orderBy)
	if l.cluster == "" || t.everyNode {
		return []string{create}
	}
	dist := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s%s AS %s ENGINE = Distributed(%s, %s, %s%s, %s)",
		l.db, t.name, l.onCluster(), l.local(t.name), l.cluster, l.db, t.name, LocalSuffix, t.shardBy)
	return []string{create, dist}
}

// ddl creates the view, reading from and writing to the local tables.
func (v matView) ddl(l layout) string {
	return fmt.Sprintf("CREATE MATERIALIZED VIEW IF NOT EXISTS %s.%s%s TO %s AS\n%s",
		l.db, v.name, l.onCluster(), l.local(v.to), strings.ReplaceAll(v.query, "{from}", l.local(v.from)))
}

// ddl creates the view on every node.
func (v plainView) ddl(l layout) string {
	return fmt.Sprintf("CREATE VIEW IF NOT EXISTS %s.%s%s AS\n%s", l.db, v.name, l.onCluster(), strings.ReplaceAll(v.query, "{db}", l.db))
}

// visibleScenes is the condition every query over views adds, so the rows of deleted scenes
// are left out from the moment of their deletion (DeletedTable) until the view-retention run
// removes them. db is the analytics database.
func visibleScenes(db string) string {
	return "scene_id NOT IN " + deletedScenes(db)
}

// deletedScenes is the subquery of the deleted scenes' ids. In a cluster each node reads its
// own whole copy of DeletedTable, so the subquery needs no GLOBAL.
func deletedScenes(db string) string {
	return "(SELECT scene_id FROM " + db + "." + DeletedTable + ")"
}

// migrationsDDL creates the table of applied versions: a TinyLog on every node (a handful of
// rows, written once per version). In a cluster each node records what its migrator applied;
// a migrator reaching another node re-runs the idempotent statements and records them there.
func migrationsDDL(l layout) string {
	return "CREATE TABLE IF NOT EXISTS " + l.db + "." + migrationsTable + l.onCluster() + " (version UInt32, applied_at DateTime) ENGINE = TinyLog"
}

// migrations is the schema history; append, never change what a shipped version creates.
// Every statement runs on ClickHouse 18.16 and on current releases: MergeTree-family engines
// with the PARTITION BY / ORDER BY syntax, a materialized view with TO, no TTL, no DateTime64,
// no lightweight DELETE.
var migrations = []migration{
	{version: 1, name: "view events and daily rollup", tables: []table{
		// Raw events. event_id is the Postgres outbox id, unique per accepted view; the streamer
		// skips ids already present when it retries an insert, and ReplacingMergeTree (whose
		// sorting key ends in event_id) also folds any duplicate that slipped through when
		// parts merge. Monthly partitions are the unit of the 400-day retention. viewed_at is
		// UTC whatever the server's time zone, so days and months are UTC days and months.
		// Sharded by scene, so an event and its duplicates meet on one shard.
		{name: EventsTable, columns: []string{"event_id UInt64", "integration_id String", "scene_id String",
			"visitor_id String", "viewed_at DateTime('UTC')"},
			engine: "ReplacingMergeTree", partitionBy: "toYYYYMM(viewed_at)",
			orderBy: "(integration_id, scene_id, viewed_at, event_id)", shardBy: "cityHash64(scene_id)"},
		// Daily rollup: distinct visitors (uniq state) and impressions (count state) per scene
		// and UTC day. Trending reads this, never the raw events.
		{name: DailyTable, columns: []string{"day Date", "integration_id String", "scene_id String",
			"visitors AggregateFunction(uniq, String)", "impressions AggregateFunction(count)"},
			engine: "AggregatingMergeTree", partitionBy: "toYYYYMM(day)",
			orderBy: "(integration_id, day, scene_id)", shardBy: "cityHash64(scene_id)"},
	}, views: []matView{
		{name: dailyView, from: EventsTable, to: DailyTable, query: `SELECT toDate(viewed_at) AS day, integration_id, scene_id,
	uniqState(visitor_id) AS visitors, countState() AS impressions
FROM {from}
GROUP BY day, integration_id, scene_id`},
	}},
	{version: 2, name: "precomputed trending windows", tables: []table{
		// One row per (integration, window start, scene) with the window's final numbers, and
		// one heartbeat row per (integration, window start) with an empty scene_id whose
		// computed_at says how fresh the whole window is. A refresh writes only the scenes
		// whose numbers changed; the newest computed_at wins when parts merge (and in a FINAL
		// read before they do). Sharded by integration so a window's rows meet on one shard.
		{name: ScoresTable, columns: []string{"integration_id String", "since Date", "scene_id String",
			"unique_views UInt64", "impressions UInt64", "computed_at DateTime('UTC')"},
			engine: "ReplacingMergeTree", params: "computed_at", partitionBy: "toYYYYMM(since)",
			orderBy: "(integration_id, since, scene_id)", shardBy: "cityHash64(integration_id)"},
		// Which windows (integration, days) trending was asked for, and when last; the newest
		// request wins when parts merge.
		{name: DemandTable, columns: []string{"integration_id String", "window_days UInt8", "requested_at DateTime('UTC')"},
			engine: "ReplacingMergeTree", params: "requested_at", partitionBy: "toYYYYMM(requested_at)",
			orderBy: "(integration_id, window_days)", shardBy: "cityHash64(integration_id)"},
	}},
	{version: 3, name: "trending top lists", tables: []table{
		// One row per refresh of a window: its best TopKept scenes, best first, as parallel
		// arrays, whether that is every active scene (complete), and the refresh's snapshot
		// time. A reader takes the newest row of the window (ORDER BY computed_at DESC LIMIT
		// 1), which is a handful of rows however many scenes the window holds; merges keep
		// only the newest. Sharded by integration like ScoresTable.
		{name: TopsTable, columns: []string{"integration_id String", "since Date", "computed_at DateTime('UTC')", "complete UInt8",
			"scene_ids Array(String)", "unique_views Array(UInt64)", "impressions Array(UInt64)"},
			engine: "ReplacingMergeTree", params: "computed_at", partitionBy: "toYYYYMM(since)",
			orderBy: "(integration_id, since)", shardBy: "cityHash64(integration_id)"},
	}},
	{version: 4, name: "deleted scenes", tables: []table{
		// One row per deleted scene (a repeated deletion adds a duplicate that merges fold).
		// Monthly partitions go with the views' 400-day retention: by then every view of the
		// scene has expired too. Replicated whole to every node in a cluster (everyNode).
		{name: DeletedTable, columns: []string{"scene_id String", "deleted_at DateTime('UTC')"},
			engine: "ReplacingMergeTree", params: "deleted_at", partitionBy: "toYYYYMM(deleted_at)",
			orderBy: "scene_id", everyNode: true},
	}, plain: []plainView{
		// What analysts query: the views without the deleted scenes' rows.
		{name: VisibleEventsView, query: "SELECT * FROM {db}." + EventsTable + "\nWHERE " + visibleScenes("{db}")},
		{name: VisibleDailyView, query: "SELECT * FROM {db}." + DailyTable + "\nWHERE " + visibleScenes("{db}")},
	}},
	{version: 5, name: "scene and integration names", tables: []table{
		// One row per change of a scene's title (and a tombstone, deleted = 1, once it is gone);
		// the highest version (the Postgres row's updated_at in microseconds, or the tombstone's
		// time) wins. Not partitioned by month: a name lives as long as its scene. Replicated
		// whole to every node in a cluster, so a join on any shard finds every name locally.
		{name: SceneNamesTable, columns: []string{"integration_id String", "scene_id String", "title String",
			"created_at DateTime('UTC')", "deleted UInt8", "version UInt64"},
			engine: "ReplacingMergeTree", params: "version", partitionBy: "tuple()",
			orderBy: "scene_id", everyNode: true},
		{name: IntegrationNamesTable, columns: []string{"integration_id String", "product_slug String",
			"account_id String", "account_name String", "version UInt64"},
			engine: "ReplacingMergeTree", params: "version", partitionBy: "tuple()",
			orderBy: "integration_id", everyNode: true},
	}, plain: []plainView{
		// argMax, not FINAL: ClickHouse 18.16 may apply a WHERE (moved to PREWHERE) before FINAL
		// folds the rows, which would drop a tombstone and show the name it replaced.
		{name: VisibleSceneNamesView, query: `SELECT integration_id, scene_id, title, created_at FROM (
	SELECT scene_id, argMax(integration_id, version) AS integration_id, argMax(title, version) AS title,
		argMax(created_at, version) AS created_at, argMax(deleted, version) AS gone
	FROM {db}.` + SceneNamesTable + `
	WHERE ` + visibleScenes("{db}") + `
	GROUP BY scene_id)
WHERE gone = 0`},
		{name: VisibleIntegrationNamesView, query: `SELECT integration_id, argMax(product_slug, version) AS product_slug,
	argMax(account_id, version) AS account_id, argMax(account_name, version) AS account_name
FROM {db}.` + IntegrationNamesTable + `
GROUP BY integration_id`},
	}},
}
