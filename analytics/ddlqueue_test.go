package analytics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStalledHosts feeds queue tasks as plain values and checks which nodes count as stalled:
// a member missing from the finished list of a task older than the cutoff, with its oldest
// such task; never a node on a task still within the threshold, a node that finished, or a
// node no longer in the cluster.
func TestStalledHosts(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	cutoff := now.Add(-30 * time.Second)
	a, b, c, d := "127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"
	gone := "127.0.0.1:4444" // a node of an earlier start of the dev cluster
	members := []string{a, b, c, d}
	all := []string{a, b, c, d}
	task := func(name string, age time.Duration, hosts, finished []string) DDLTask {
		return DDLTask{Name: name, Created: now.Add(-age), Hosts: hosts, Finished: finished}
	}
	for _, tc := range []struct {
		name  string
		tasks []DDLTask
		want  []DDLStall
	}{
		{"empty queue", nil, []DDLStall{}},
		{"every node finished", []DDLTask{task("query-0000000001", time.Hour, all, all)}, []DDLStall{}},
		{"a young task is not judged", []DDLTask{task("query-0000000002", 10*time.Second, all, []string{a})}, []DDLStall{}},
		{"a node that is gone is not waited for",
			[]DDLTask{task("query-0000000003", time.Hour, append([]string{gone}, all...), all)}, []DDLStall{}},
		{"one node behind, its oldest task named",
			[]DDLTask{
				task("query-0000000010", 5*time.Minute, all, []string{a, c, d}),
				task("query-0000000011", 2*time.Minute, all, []string{a, c, d}),
				task("query-0000000012", 5*time.Second, all, []string{a}),
			},
			[]DDLStall{{Host: b, Task: "query-0000000010", Since: now.Add(-5 * time.Minute)}}},
		{"two nodes behind, by host",
			[]DDLTask{
				task("query-0000000021", time.Minute, all, []string{a, c}),
				task("query-0000000020", 2*time.Minute, all, []string{a, b, c}),
			},
			[]DDLStall{
				{Host: b, Task: "query-0000000021", Since: now.Add(-time.Minute)},
				{Host: d, Task: "query-0000000020", Since: now.Add(-2 * time.Minute)},
			}},
		{"a task addressed to some nodes only", []DDLTask{task("query-0000000030", time.Hour, []string{a, b}, []string{a, b})}, []DDLStall{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, StalledHosts(tc.tasks, members, cutoff))
		})
	}
}

// TestDDLEntryHosts reads the hosts line of a queue entry as ClickHouse writes it (host parts
// escaped as file names) into the "host:port" form system.clusters gives.
func TestDDLEntryHosts(t *testing.T) {
	entry := "version: 1\nquery: CREATE DATABASE IF NOT EXISTS sh ON CLUSTER analytics\n" +
		"hosts: ['127%2E0%2E0%2E1:19000','127%2E0%2E0%2E1:40001','ch%2Dnode%2D2:9000']\ninitiator: 127%2E0%2E0%2E1:19000\n"
	require.Equal(t, []string{"127.0.0.1:19000", "127.0.0.1:40001", "ch-node-2:9000"}, ddlEntryHosts(entry))
	require.Empty(t, ddlEntryHosts("version: 1\nquery: x\n"))
	require.Equal(t, "127.0.0.1:9000", unescapeHost("127%2E0%2E0%2E1:9000"))
	require.Equal(t, "plain:9000", unescapeHost("plain:9000"))
}
