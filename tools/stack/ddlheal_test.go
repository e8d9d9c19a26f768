package stack

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/analytics"
)

// TestDDLHealerRestartsANodeStalledTwiceOnOneTask: the healer restarts a node only when two
// reads in a row find it on the same unfinished task, never a node that moved on between reads
// or a host that is not one of the stack's nodes, and not the same node again within the grace.
func TestDDLHealerRestartsANodeStalledTwiceOnOneTask(t *testing.T) {
	a := &clickhouse{name: "clickhouse-1-1", tcpPort: 19000}
	b := &clickhouse{name: "clickhouse-1-2", tcpPort: 40001}
	h := newDDLHealer([]*clickhouse{a, b})
	stall := func(host, task string) analytics.DDLStall { return analytics.DDLStall{Host: host, Task: task} }
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	next := func() time.Time { now = now.Add(ddlHealEvery); return now }

	require.Empty(t, h.round([]analytics.DDLStall{stall(b.addr(), "query-1"), stall("127.0.0.1:4444", "query-1")}, next()), "first sighting")
	require.Empty(t, h.round([]analytics.DDLStall{stall(b.addr(), "query-2")}, next()), "it moved on to the next task")
	got := h.round([]analytics.DDLStall{stall(b.addr(), "query-2"), stall("127.0.0.1:4444", "query-1")}, next())
	require.Equal(t, map[string]analytics.DDLStall{"clickhouse-1-2": stall(b.addr(), "query-2")}, got, "stalled twice on one task")
	require.Empty(t, h.round([]analytics.DDLStall{stall(b.addr(), "query-2")}, next()), "within the grace after its restart")
	require.Empty(t, h.round(nil, next()), "caught up")
	for now.Add(ddlHealEvery).Sub(h.healed["clickhouse-1-2"]) < ddlHealGrace {
		require.Empty(t, h.round([]analytics.DDLStall{stall(b.addr(), "query-3")}, next()))
	}
	require.Equal(t, []string{"clickhouse-1-2"}, slices.Collect(maps.Keys(h.round([]analytics.DDLStall{stall(b.addr(), "query-3")}, next()))), "stalled again after the grace")
}
