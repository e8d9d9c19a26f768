package analytics

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClusterVariant renders the whole schema for a cluster and checks every table is a
// Replicated engine on every shard (its ZooKeeper path keyed by the {shard} macro, its replica
// by {replica}) with a Distributed table of the table's own name over it, and that materialized
// views read and write the local tables, so each shard rolls up its own events.
func TestClusterVariant(t *testing.T) {
	l := layout{db: "sh", cluster: "analytics"}
	var stmts []string
	for _, m := range migrations {
		stmts = append(stmts, m.statements(l)...)
	}
	all := strings.Join(stmts, "\n")
	seen := map[string]bool{}
	for _, m := range migrations {
		for _, tb := range m.tables {
			require.False(t, seen[tb.name], "%s defined once", tb.name)
			seen[tb.name] = true
			require.NotEmpty(t, tb.shardBy, "%s has a sharding key", tb.name)
			local := regexp.MustCompile(`(?s)CREATE TABLE IF NOT EXISTS sh\.` + tb.name + `_local ON CLUSTER analytics \(.*?\) ENGINE = Replicated` +
				tb.engine + `\('/clickhouse/tables/\{shard\}/sh/` + tb.name + `_local', '\{replica\}'` + regexp.QuoteMeta(prefixed(", ", tb.params)) +
				`\)\nPARTITION BY ` + regexp.QuoteMeta(tb.partitionBy) + `\nORDER BY ` + regexp.QuoteMeta(tb.orderBy))
			require.Regexp(t, local, all, "%s: replicated local table", tb.name)
			require.Contains(t, all, "CREATE TABLE IF NOT EXISTS sh."+tb.name+" ON CLUSTER analytics AS sh."+tb.name+
				"_local ENGINE = Distributed(analytics, sh, "+tb.name+"_local, "+tb.shardBy+")", "%s: distributed table", tb.name)
		}
		for _, v := range m.views {
			ddl := v.ddl(l)
			require.Contains(t, ddl, "CREATE MATERIALIZED VIEW IF NOT EXISTS sh."+v.name+" ON CLUSTER analytics TO sh."+v.to+"_local AS")
			require.Contains(t, ddl, "FROM sh."+v.from+"_local\n")
			require.NotContains(t, v.query, "sh.", "views name their source only through {from}")
		}
	}
	for _, name := range []string{EventsTable, DailyTable, ScoresTable, DemandTable, TopsTable} {
		require.True(t, seen[name], "%s is in the schema", name)
	}
	for _, s := range stmts {
		require.Contains(t, s, " ON CLUSTER analytics", "every statement runs on every node: %s", s)
		require.Contains(t, s, "IF NOT EXISTS", "idempotent: %s", s)
		require.NotRegexp(t, `ENGINE = (Replacing|Aggregating|Summing)?MergeTree`, s, "no unreplicated table in a cluster")
	}
	require.Equal(t, "CREATE TABLE IF NOT EXISTS sh.schema_migrations ON CLUSTER analytics (version UInt32, applied_at DateTime) ENGINE = TinyLog",
		migrationsDDL(l))
	require.Equal(t, "sh.view_events_local", l.local(EventsTable), "mutations and partition drops address the local tables")
}

// TestSingleServerVariant: on one server the same definitions give plain tables under their
// own names, nothing replicated or distributed.
func TestSingleServerVariant(t *testing.T) {
	l := layout{db: "sh"}
	for _, m := range migrations {
		for _, s := range m.statements(l) {
			require.NotContains(t, s, "ON CLUSTER")
			require.NotContains(t, s, "Replicated")
			require.NotContains(t, s, "Distributed")
			require.NotContains(t, s, LocalSuffix)
		}
	}
	events := migrations[0].tables[0].ddl(l)
	require.Equal(t, []string{"CREATE TABLE IF NOT EXISTS sh.view_events (\n\tevent_id UInt64,\n\tintegration_id String,\n\tscene_id String,\n\t" +
		"visitor_id String,\n\tviewed_at DateTime('UTC')\n) ENGINE = ReplacingMergeTree()\nPARTITION BY toYYYYMM(viewed_at)\n" +
		"ORDER BY (integration_id, scene_id, viewed_at, event_id)"}, events)
	require.Equal(t, "CREATE MATERIALIZED VIEW IF NOT EXISTS sh.scene_views_daily_mv TO sh.scene_views_daily AS\nSELECT toDate(viewed_at) AS day, "+
		"integration_id, scene_id,\n\tuniqState(visitor_id) AS visitors, countState() AS impressions\nFROM sh.view_events\nGROUP BY day, integration_id, scene_id",
		migrations[0].views[0].ddl(l))
	require.Equal(t, "sh.view_events", l.local(EventsTable))
}

// TestMigrationVersionsAscend: versions are applied in order and recorded by number.
func TestMigrationVersionsAscend(t *testing.T) {
	for i, m := range migrations {
		require.Equal(t, uint32(i+1), m.version, m.name)
	}
}

func TestClusterOfReadsTheDistributedEngine(t *testing.T) {
	for _, c := range []struct {
		engine, full, want string
		err                bool
	}{
		{"ReplacingMergeTree", "ReplacingMergeTree PARTITION BY toYYYYMM(viewed_at) ORDER BY (integration_id)", "", false},
		{"Distributed", "Distributed(analytics, splathost, view_events_local, cityHash64(scene_id))", "analytics", false},
		{"Distributed", "Distributed('analytics', 'splathost', 'view_events_local', cityHash64(scene_id))", "analytics", false},
		{"Distributed", "Distributed(a;b, x)", "", true},
	} {
		got, err := clusterOf(c.engine, c.full)
		if c.err {
			require.Error(t, err, c.full)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got, c.full)
	}
}

// prefixed is p+s, or "" when s is empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
