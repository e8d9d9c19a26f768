package analytics

import "strings"

// Table names of the analytics schema (documented for analysts in README.md).
const (
	// EventsTable holds one row per accepted view, partitioned by month.
	EventsTable = "view_events"
	// DailyTable is the per-day, per-scene rollup the trending query reads.
	DailyTable = "scene_views_daily"
	// dailyView feeds DailyTable from every insert into EventsTable.
	dailyView = "scene_views_daily_mv"
)

// migration is one version of the ClickHouse schema. Statements use {db} for the database.
type migration struct {
	version uint32
	name    string
	stmts   []string
}

func (m migration) statements(db string) []string {
	out := make([]string, len(m.stmts))
	for i, s := range m.stmts {
		out[i] = strings.ReplaceAll(s, "{db}", db)
	}
	return out
}

// migrations is the schema history; append, never edit a shipped version. Every statement runs
// on ClickHouse 18.16 and on current releases: MergeTree-family engines with the
// PARTITION BY / ORDER BY syntax, a materialized view with TO, no TTL, no DateTime64, no
// lightweight DELETE.
var migrations = []migration{
	{version: 1, name: "view events and daily rollup", stmts: []string{
		// Raw events. event_id is the Postgres outbox id, unique per accepted view; the streamer
		// skips ids already present when it retries an insert, and ReplacingMergeTree (whose
		// sorting key ends in event_id) also folds any duplicate that slipped through when
		// parts merge. Monthly partitions are the unit of the 400-day retention. viewed_at is
		// UTC whatever the server's time zone, so days and months are UTC days and months.
		`CREATE TABLE IF NOT EXISTS {db}.view_events (
			event_id UInt64,
			integration_id String,
			scene_id String,
			visitor_id String,
			viewed_at DateTime('UTC')
		) ENGINE = ReplacingMergeTree()
		PARTITION BY toYYYYMM(viewed_at)
		ORDER BY (integration_id, scene_id, viewed_at, event_id)`,
		// Daily rollup: distinct visitors (uniq state) and impressions (count state) per scene
		// and UTC day. Trending reads this, never the raw events.
		`CREATE TABLE IF NOT EXISTS {db}.scene_views_daily (
			day Date,
			integration_id String,
			scene_id String,
			visitors AggregateFunction(uniq, String),
			impressions AggregateFunction(count)
		) ENGINE = AggregatingMergeTree()
		PARTITION BY toYYYYMM(day)
		ORDER BY (integration_id, day, scene_id)`,
		`CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.scene_views_daily_mv TO {db}.scene_views_daily AS
		SELECT toDate(viewed_at) AS day, integration_id, scene_id,
			uniqState(visitor_id) AS visitors, countState() AS impressions
		FROM {db}.view_events
		GROUP BY day, integration_id, scene_id`,
	}},
}
