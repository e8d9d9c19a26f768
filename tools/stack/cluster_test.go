package stack

import (
	"encoding/xml"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// chConfig is the part of a rendered ClickHouse config the cluster depends on.
type chConfig struct {
	TCPPort         int `xml:"tcp_port"`
	InterserverPort int `xml:"interserver_http_port"`
	Shards          []struct {
		InternalReplication bool `xml:"internal_replication"`
		Replicas            []struct {
			Host string `xml:"host"`
			Port int    `xml:"port"`
		} `xml:"replica"`
	} `xml:"remote_servers>analytics>shard"`
	ZooKeeper []struct {
		Port int `xml:"port"`
	} `xml:"zookeeper>node"`
	DDLPath string `xml:"distributed_ddl>path"`
	Shard   int    `xml:"macros>shard"`
	Replica string `xml:"macros>replica"`
}

// The cluster shape's layout, without starting anything: every node named by its role, in
// start order; each ClickHouse node's config places it in a 2x2 cluster whose replicas are the
// nodes themselves, on one ZooKeeper, with macros matching its name; the standby follows the
// primary; no two listeners share a port; the product's first nodes keep the fixed ports.
func TestClusterLayout(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ports := DefaultPorts()
	s, err := New(Options{Dir: dir, Services: ServicesNone, Cluster: true, Ports: ports}, log)
	require.NoError(t, err)
	s.pg = newPostgres(dir, ports.Postgres, log)
	s.ch = newClickHouse(dir, ports.ClickHouseTCP, ports.ClickHouseHTTP, log)
	s.s3 = newObjectStore(dir, "versitygw", ports.ObjectStore, "b", Secrets{}, log)
	s.temporal = newTemporal(dir, "temporal-node", ports, "default", log)
	require.NoError(t, s.setupCluster())

	var names []string
	for _, e := range s.engines() {
		names = append(names, e.name)
	}
	require.Equal(t, []string{"postgres-primary", "postgres-standby", "zookeeper-1", "zookeeper-2", "zookeeper-3",
		"clickhouse-1-1", "clickhouse-1-2", "clickhouse-2-1", "clickhouse-2-2", "versitygw-1", "versitygw-2",
		"temporal-history-1", "temporal-history-2", "temporal-matching-1", "temporal-frontend-1", "temporal-frontend-2",
		"temporal-worker-1"}, names)
	c := s.cluster
	require.Equal(t, ports.Postgres, c.standby.primaryPort)
	require.Equal(t, ports.ClickHouseTCP, c.ch[0].tcpPort, "the product's node keeps the fixed port")
	require.Equal(t, ports.ObjectStore, s.s3.port)
	require.Equal(t, s.s3.root, c.gateways[0].root, "both gateways serve one store")

	used := map[int]string{}
	claim := func(port int, who string) {
		require.NotZero(t, port, who)
		require.Empty(t, used[port], "%s and %s share port %d", who, used[port], port)
		used[port] = who
	}
	claim(s.pg.port, "postgres-primary")
	claim(c.standby.port, "postgres-standby")
	for _, z := range c.zk {
		claim(z.port, z.name)
		claim(z.ensemble[z.id-1].PeerPort, z.name+" peer")
		claim(z.ensemble[z.id-1].ElectionPort, z.name+" election")
	}
	for _, n := range s.temporal.nodes {
		for _, f := range []string{"--frontend-port", "--history-port", "--matching-port", "--worker-port", "--frontend-http-port", "--membership-port"} {
			if v := flagValue(n.args, f); v != "" {
				claim(atoi(t, v), n.name+" "+f)
			}
		}
	}
	claim(ports.TemporalUI, "temporal ui")
	claim(s.s3.port, "versitygw-1")
	claim(c.gateways[0].port, "versitygw-2")
	for i, n := range c.ch {
		claim(n.tcpPort, n.name+" tcp")
		claim(n.httpPort, n.name+" http")
		require.NoError(t, os.MkdirAll(n.dir, 0o755)) // start makes it
		require.NoError(t, n.writeConfig())
		b, err := os.ReadFile(filepath.Join(n.dir, "config.xml"))
		require.NoError(t, err)
		var cfg chConfig
		require.NoError(t, xml.Unmarshal(b, &cfg), "%s: config.xml is well-formed", n.name)
		claim(cfg.InterserverPort, n.name+" interserver")
		users, err := os.ReadFile(filepath.Join(n.dir, "users.xml"))
		require.NoError(t, err)
		require.Contains(t, string(users), "<load_balancing>in_order</load_balancing>",
			"Distributed reads and writes go to the same replica of each shard")
		require.Contains(t, string(users), "<prefer_localhost_replica>0</prefer_localhost_replica>",
			"whichever node a client reached")
		require.Equal(t, n.tcpPort, cfg.TCPPort)
		require.Equal(t, filepath.Join(dir, n.name), n.dir, "a data directory of its own")
		require.Equal(t, n.name, cfg.Replica)
		require.Equal(t, 1+i/clusterReplicas, cfg.Shard)
		require.Equal(t, "/clickhouse/task_queue/ddl", cfg.DDLPath)
		require.Len(t, cfg.ZooKeeper, zkNodes, "every member of the ensemble")
		for i, z := range c.zk {
			require.Equal(t, z.port, cfg.ZooKeeper[i].Port)
		}
		require.Len(t, cfg.Shards, clusterShards)
		for sh, shard := range cfg.Shards {
			require.True(t, shard.InternalReplication, "the Replicated tables copy between replicas")
			require.Len(t, shard.Replicas, clusterReplicas)
			for r, rep := range shard.Replicas {
				require.Equal(t, loopback, rep.Host)
				require.Equal(t, c.ch[sh*clusterReplicas+r].tcpPort, rep.Port)
			}
		}
	}

	// The single-node config has none of it.
	single := newClickHouse(dir, ports.ClickHouseTCP, ports.ClickHouseHTTP, log)
	require.NoError(t, os.MkdirAll(single.dir, 0o755))
	require.NoError(t, single.writeConfig())
	b, err := os.ReadFile(filepath.Join(dir, "clickhouse", "config.xml"))
	require.NoError(t, err)
	var cfg chConfig
	require.NoError(t, xml.Unmarshal(b, &cfg))
	require.Zero(t, cfg.InterserverPort)
	require.Empty(t, cfg.Shards)
	require.Empty(t, cfg.ZooKeeper)
}
