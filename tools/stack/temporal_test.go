package stack

import (
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// flagValue is the value following name in args; "" when absent.
func flagValue(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err, s)
	return n
}

// The single-node stack runs one temporal-node with every role on SQLite, serving the UI,
// registering the namespace with the workflows' search attributes; the product dials it alone.
func TestTemporalSingleNode(t *testing.T) {
	dir := t.TempDir()
	ports := DefaultPorts()
	tm := newTemporal(dir, "/x/temporal-node", ports, "ns", slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.Len(t, tm.nodes, 1)
	n := tm.nodes[0]
	require.Equal(t, "temporal", n.name)
	require.Equal(t, filepath.Join(dir, "logs", "temporal.log"), n.logPath, "the log where make dev always put it")
	require.Equal(t, "all", flagValue(n.args, "--roles"))
	require.Equal(t, filepath.Join(dir, "temporal", "temporal.db"), flagValue(n.args, "--sqlite"))
	require.Empty(t, flagValue(n.args, "--postgres"))
	require.Empty(t, flagValue(n.args, "--membership-port"), "static membership: no gossip")
	require.Equal(t, strconv.Itoa(ports.TemporalUI), flagValue(n.args, "--ui-port"))
	require.Equal(t, "ns", flagValue(n.args, "--namespace"))
	require.Equal(t, strings.Join(SearchAttributes, ","), flagValue(n.args, "--search-attributes"))
	require.Equal(t, []string{hostPort(ports.TemporalFrontend)}, tm.frontends())
	require.Equal(t, httpURL(ports.TemporalUI), n.url(), "stack.json lists the UI for it")
}

// The cluster shape's Temporal: two frontends, two history hosts splitting 8 shards, a matching
// host and the internal worker, one role per process on the stack's Postgres, each with a
// membership port of its own; the first of each role keeps the fixed port; the worker's process
// serves the UI over both frontends; the product gets both frontends.
func TestTemporalClusterNodes(t *testing.T) {
	dir := t.TempDir()
	ports := DefaultPorts()
	tm := newTemporal(dir, "temporal-node", ports, "default", slog.New(slog.NewTextHandler(io.Discard, nil)))
	free, low := 40000, 20000
	tm.setupCluster("postgres://postgres@127.0.0.1:15432", func() int { free++; return free }, func() int { low++; return low })

	roles := map[string]int{}
	for _, n := range tm.nodes {
		role := flagValue(n.args, "--roles")
		roles[role]++
		require.Equal(t, "temporal-"+role+"-"+strconv.Itoa(roles[role]), n.name)
		require.Equal(t, "postgres://postgres@127.0.0.1:15432", flagValue(n.args, "--postgres"), n.name)
		require.Empty(t, flagValue(n.args, "--sqlite"), n.name)
		require.Equal(t, strconv.Itoa(temporalShards), flagValue(n.args, "--shards"), n.name)
		require.Less(t, atoi(t, flagValue(n.args, "--membership-port")), 1<<15, "%s gossips on a port of its own, a smallint in cluster_membership", n.name)
		require.Equal(t, hostPort(atoi(t, flagValue(n.args, "--"+role+"-port"))), n.addr, n.name)
		require.Equal(t, hostPort(ports.TemporalFrontend), flagValue(n.args, "--frontend-addr"), n.name)
		require.Equal(t, filepath.Join(dir, "logs", n.name+".log"), n.logPath)
	}
	require.Equal(t, map[string]int{"frontend": 2, "history": 2, "matching": 1, "worker": 1}, roles)
	require.Greater(t, temporalShards, 1, "the history hosts split the shards")
	first := map[string]int{"temporal-frontend-1": ports.TemporalFrontend, "temporal-history-1": ports.TemporalHistory,
		"temporal-matching-1": ports.TemporalMatching, "temporal-worker-1": ports.TemporalWorker}
	for _, n := range tm.nodes {
		if p, ok := first[n.name]; ok {
			require.Equal(t, hostPort(p), n.addr, n.name)
		}
	}
	fronts := tm.frontends()
	require.Len(t, fronts, 2)
	require.Equal(t, hostPort(ports.TemporalFrontend), fronts[0])
	w := tm.nodes[len(tm.nodes)-1]
	require.Equal(t, "temporal-worker-1", w.name)
	require.Equal(t, strconv.Itoa(ports.TemporalUI), flagValue(w.args, "--ui-port"))
	require.Equal(t, strings.Join(fronts, ","), flagValue(w.args, "--ui-frontends"), "the UI outlives one frontend")
	require.Equal(t, httpURL(ports.TemporalUI), w.url())
}

// A ZooKeeper ensemble member's zoo.cfg lists every member's quorum and election ports; a lone
// server's lists none.
func TestZooKeeperEnsembleConfig(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	z := newZooKeeper(t.TempDir(), "zookeeper-2", 2181, log)
	require.NotContains(t, z.config(), "server.")
	z.id = 2
	z.ensemble = []zkServer{{1, 3001, 4001}, {2, 3002, 4002}, {3, 3003, 4003}}
	cfg := z.config()
	for _, want := range []string{"clientPort=2181\n", "server.1=127.0.0.1:3001:4001\n", "server.2=127.0.0.1:3002:4002\n",
		"server.3=127.0.0.1:3003:4003\n", "4lw.commands.whitelist=ruok,srvr,mntr\n"} {
		require.Contains(t, cfg, want)
	}
}
