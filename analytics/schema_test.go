package analytics

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClusterVariant renders the whole schema for a cluster and checks every table is a
// Replicated engine on every shard (its ZooKeeper path keyed by the {shard} macro, its replica
// by {replica}) with a Distributed table of the table's own name over it, or, for the small
// tables every shard's queries read, one Replicated table on every node; that materialized
// views read and write the local tables, so each shard rolls up its own events; and that the
// analysts' views read the Distributed tables.
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
			if tb.everyNode {
				// One ZooKeeper path for the whole cluster: every node is a replica of it.
				require.Contains(t, all, "CREATE TABLE IF NOT EXISTS sh."+tb.name+" ON CLUSTER analytics (", "%s: under its own name", tb.name)
				require.Contains(t, all, "ENGINE = Replicated"+tb.engine+"('/clickhouse/tables/all/sh/"+tb.name+"', '{replica}'"+prefixed(", ", tb.params)+")",
					"%s: replicated to every node", tb.name)
				require.NotContains(t, all, "sh."+tb.name+LocalSuffix, "%s: no local table", tb.name)
				require.NotContains(t, all, "Distributed(analytics, sh, "+tb.name, "%s: not sharded", tb.name)
				require.Equal(t, "sh."+tb.name, l.local(tb.name), "%s: mutations and partition drops address it", tb.name)
				continue
			}
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
		for _, v := range m.plain {
			// Over the Distributed tables (or the tables every node holds whole), the rows of
			// scenes filtered by each node's own whole copy of the deleted scenes.
			require.Contains(t, v.ddl(l), "CREATE VIEW IF NOT EXISTS sh."+v.name+" ON CLUSTER analytics AS\nSELECT ")
			require.NotContains(t, v.ddl(l), LocalSuffix)
			if v.name != VisibleIntegrationNamesView {
				require.Contains(t, v.ddl(l), "WHERE scene_id NOT IN (SELECT scene_id FROM sh.deleted_scenes)")
			}
		}
	}
	for _, name := range []string{EventsTable, DailyTable, ScoresTable, DemandTable, TopsTable, DeletedTable, SceneNamesTable, IntegrationNamesTable} {
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
	require.Equal(t, "sh.deleted_scenes", l.local(DeletedTable))
	deleted := migrations[3]
	require.Equal(t, []string{"CREATE TABLE IF NOT EXISTS sh.deleted_scenes (\n\tscene_id String,\n\tdeleted_at DateTime('UTC')\n) " +
		"ENGINE = ReplacingMergeTree(deleted_at)\nPARTITION BY toYYYYMM(deleted_at)\nORDER BY scene_id"}, deleted.tables[0].ddl(l))
	require.Equal(t, []string{
		"CREATE VIEW IF NOT EXISTS sh.view_events_visible AS\nSELECT * FROM sh.view_events\nWHERE scene_id NOT IN (SELECT scene_id FROM sh.deleted_scenes)",
		"CREATE VIEW IF NOT EXISTS sh.scene_views_daily_visible AS\nSELECT * FROM sh.scene_views_daily\nWHERE scene_id NOT IN (SELECT scene_id FROM sh.deleted_scenes)",
	}, deleted.statements(l)[1:], "the analysts' views leave the deleted scenes out")
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
