package main

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/primitives"
)

// One role per process on Postgres: the process's own role has its ports and a membership
// port, every other role is listed empty (the membership monitor tracks only configured
// services), both stores are Postgres databases, the internal worker finds the frontends
// through membership, and the shard count is the one asked for.
func TestServerConfigOneRoleOnPostgres(t *testing.T) {
	c, err := parse([]string{"--roles", "history", "--postgres", "postgres://postgres:pw@127.0.0.1:15432,127.0.0.1:15433?target_session_attrs=read-write",
		"--shards", "8", "--history-port", "7235", "--membership-port", "21000", "--cluster-id", "id",
		"--frontend-addr", "127.0.0.1:7233"})
	require.NoError(t, err)
	conf, err := serverConfig(c.node)
	require.NoError(t, err)
	require.Len(t, conf.Services, 4)
	h := conf.Services["history"].RPC
	require.Equal(t, 7235, h.GRPCPort)
	require.Equal(t, 21000, h.MembershipPort)
	require.Equal(t, loopback, h.BindOnIP)
	for _, r := range []string{"frontend", "matching", "worker"} {
		require.Zero(t, conf.Services[r].RPC.GRPCPort, r)
		require.Zero(t, conf.Services[r].RPC.MembershipPort, r)
	}
	require.EqualValues(t, 8, conf.Persistence.NumHistoryShards)
	def := conf.Persistence.DataStores[conf.Persistence.DefaultStore].SQL
	vis := conf.Persistence.DataStores[conf.Persistence.VisibilityStore].SQL
	require.Equal(t, postgresql.PluginNamePGX, def.PluginName, "pgx takes the host list")
	require.Equal(t, "temporal", def.DatabaseName)
	require.Equal(t, "temporal_visibility", vis.DatabaseName)
	require.Equal(t, "127.0.0.1:15432,127.0.0.1:15433", def.ConnectAddr)
	require.Equal(t, "read-write", def.ConnectAttributes["target_session_attrs"])
	require.Equal(t, "postgres", def.User)
	require.Equal(t, "pw", def.Password)
	require.Empty(t, conf.PublicClient.HostPort, "the internal worker finds frontends through membership")
	require.Equal(t, "id", conf.ClusterMetadata.ClusterInformation[clusterName].ClusterID)
	require.Equal(t, "127.0.0.1:7233", conf.ClusterMetadata.ClusterInformation[clusterName].RPCAddress)
}

// Every role in one process on SQLite: static membership with each role at its own port, no
// gossip port, the internal worker dialling the frontend in the same process.
func TestServerConfigAllRolesOnSQLite(t *testing.T) {
	c, err := parse([]string{"--roles", "all", "--sqlite", "/tmp/x.db", "--cluster-id", "id", "--frontend-addr", "127.0.0.1:7233",
		"--frontend-port", "7233", "--frontend-http-port", "7234", "--history-port", "7235", "--matching-port", "7236", "--worker-port", "7237"})
	require.NoError(t, err)
	require.True(t, c.node.allRoles())
	conf, err := serverConfig(c.node)
	require.NoError(t, err)
	require.Equal(t, 7234, conf.Services["frontend"].RPC.HTTPPort)
	for r, port := range map[string]int{"frontend": 7233, "history": 7235, "matching": 7236, "worker": 7237} {
		require.Equal(t, port, conf.Services[r].RPC.GRPCPort, r)
		require.Zero(t, conf.Services[r].RPC.MembershipPort, r)
	}
	require.Equal(t, "127.0.0.1:7233", conf.PublicClient.HostPort)
	require.EqualValues(t, 1, conf.Persistence.NumHistoryShards)
	require.Equal(t, "/tmp/x.db", conf.Persistence.DataStores[conf.Persistence.DefaultStore].SQL.DatabaseName)
	hosts := c.node.staticHosts()
	require.Len(t, hosts, 4)
	require.Equal(t, "127.0.0.1:7236", hosts[primitives.MatchingService].Self)
}

// Bad command lines fail with the flag to fix.
func TestParseRejects(t *testing.T) {
	for want, args := range map[string][]string{
		"--roles":           {"--roles", "gateway", "--sqlite", "x"},
		"exactly one of":    {"--roles", "all", "--cluster-id", "i", "--frontend-addr", "a"},
		"--membership-port": {"--roles", "matching", "--postgres", "postgres://u@h:1", "--matching-port", "1", "--cluster-id", "i", "--frontend-addr", "a"},
		"--cluster-id":      {"--roles", "worker", "--postgres", "postgres://u@h:1", "--worker-port", "1", "--membership-port", "2", "--frontend-addr", "a"},
		"--frontend-http-port": {"--roles", "frontend", "--postgres", "postgres://u@h:1", "--frontend-port", "1",
			"--membership-port", "2", "--cluster-id", "i", "--frontend-addr", "a"},
		"setup: --postgres": {"setup", "--namespace", "x"},
	} {
		_, err := parse(args)
		require.ErrorContains(t, err, want, args)
	}
	_, err := uiTarget("")
	require.Error(t, err)
	one, err := uiTarget("127.0.0.1:1")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:1", one)
}
