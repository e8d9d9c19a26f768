package stack

import (
	"github.com/splathost/splathost/internal/stackstate"

	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"time"
)

// The cluster shape (Options.Cluster, `bin/stack --cluster`, `make dev-cluster`) runs every
// engine the product rests on as more than one node, on loopback:
//
//   - Postgres: the primary (the product's) and one streaming hot standby made with
//     pg_basebackup -R (postgres-primary, postgres-standby; the names follow the roles, which
//     `bin/stack pg-promote` and `pg-rebuild` move between the two data directories,
//     pgroles.go);
//   - ClickHouse: clusterShards shards of clusterReplicas replicas (clickhouse-<shard>-<replica>)
//     coordinated by a ZooKeeper ensemble of zkNodes (zookeeper-1..3, so losing one keeps a
//     quorum; every ClickHouse node lists all three), with the analytics schema's cluster variant
//     (SPLATHOST_CLICKHOUSE_CLUSTER=ClickHouseCluster: Replicated _local tables and Distributed
//     tables over them); the product gets every node, dialled in order (analytics.Open);
//   - versitygw: two gateways over one store directory (versitygw-1, versitygw-2); the
//     product's S3 endpoint is one URL, versitygw-1's;
//   - Temporal: each role in temporal-node processes of its own on the primary's Postgres
//     (temporalcluster.go): temporal-history-1/2 over temporalShards shards, temporal-matching-1,
//     temporal-frontend-1/2 (the product gets both, SPLATHOST_TEMPORAL_ADDR being the list),
//     temporal-worker-1 (also serving the UI), joined by ringpop membership.
//
// The first node of each engine keeps the engine's ports of Ports; the others take free
// loopback ports at every start (the configs are rewritten on every start, and the standby
// is given the primary's address on its command line).
const (
	// ClickHouseCluster is the remote_servers name of the cluster shape's ClickHouse cluster.
	ClickHouseCluster = "analytics"
	clusterShards     = 2
	clusterReplicas   = 2
	// zkNodes is the ZooKeeper ensemble's size: three, so one can die and a quorum remains.
	zkNodes = 3
)

// chNode places one clickhouse-server in the cluster: what the config template renders into
// interserver_http_port, remote_servers, zookeeper and macros.
type chNode struct {
	Cluster         string
	Shard           int
	InterserverPort int
	// Shards holds every node's native port, shard by shard.
	Shards [][]int
	// ZooKeeper holds the coordination service's client ports.
	ZooKeeper []int
}

// clusterNodes are the nodes the cluster shape adds to the single-node stack's.
type clusterNodes struct {
	standby *postgres
	zk      []*zookeeper
	// ch is every ClickHouse node, shard by shard; ch[0] is the stack's own (Stack.ch).
	ch []*clickhouse
	// gateways are the versitygw processes after the first (Stack.s3).
	gateways []*objectStore
}

// setupCluster turns the single-node parts into the cluster shape's first nodes and creates
// the others, on free ports. Nothing starts here.
func (s *Stack) setupCluster() error {
	o := s.opts
	const extraCH = clusterShards*clusterReplicas - 1
	// standby, zookeeper, versitygw-2, then tcp+http of each extra ClickHouse node and every
	// node's interserver port.
	ports, err := freePorts(2 + 3*zkNodes + 2*extraCH + clusterShards*clusterReplicas + temporalClusterPorts)
	if err != nil {
		return err
	}
	next := func() int { p := ports[0]; ports = ports[1:]; return p }

	c := &clusterNodes{standby: newStandby(o.Dir, next(), s.pg.port, s.log)}
	if err := s.placePostgres(c.standby); err != nil {
		return err
	}
	var zkPorts []int
	var ensemble []zkServer
	for i := 1; i <= zkNodes; i++ {
		z := newZooKeeper(o.Dir, fmt.Sprintf("zookeeper-%d", i), next(), s.log)
		z.id = i
		c.zk = append(c.zk, z)
		zkPorts = append(zkPorts, z.port)
		ensemble = append(ensemble, zkServer{ID: i, PeerPort: next(), ElectionPort: next()})
	}
	for _, z := range c.zk {
		z.ensemble = ensemble
	}
	g := s.s3.gateway("versitygw-2", next())
	s.s3.name = "versitygw-1"
	c.gateways = []*objectStore{g}
	members, err := freeLowPorts(temporalNodes)
	if err != nil {
		return err
	}
	member := func() int { p := members[0]; members = members[1:]; return p }
	// Temporal's nodes get both Postgres servers, as the product does (stackstate.FailoverURL),
	// so the standby's promotion moves them too.
	s.temporal.setupCluster(stackstate.FailoverURL("postgres://postgres@"+hostPort(s.pg.port), "postgres://postgres@"+hostPort(c.standby.port)), next, member)

	shards := make([][]int, clusterShards)
	for sh := 1; sh <= clusterShards; sh++ {
		for r := 1; r <= clusterReplicas; r++ {
			name := fmt.Sprintf("clickhouse-%d-%d", sh, r)
			var node *clickhouse
			if sh == 1 && r == 1 {
				node = s.ch
			} else {
				node = newClickHouse(o.Dir, next(), next(), s.log)
			}
			// A directory of its own: a single-node data directory holds plain tables that
			// the cluster variant's migrations would take for theirs.
			node.name, node.dir, node.log = name, filepath.Join(o.Dir, name), s.log.With("part", name)
			node.node = &chNode{Cluster: ClickHouseCluster, Shard: sh, InterserverPort: next(), ZooKeeper: zkPorts}
			shards[sh-1] = append(shards[sh-1], node.tcpPort)
			c.ch = append(c.ch, node)
		}
	}
	for _, n := range c.ch {
		n.node.Shards = shards
	}
	s.cluster = c
	return nil
}

// chAddrs are every ClickHouse node's native address, shard by shard.
func (c *clusterNodes) chAddrs() []string {
	out := make([]string, len(c.ch))
	for i, n := range c.ch {
		out[i] = n.addr()
	}
	return out
}

// clusterSteps are the start-up steps of the cluster shape's nodes, in dependency order; the
// caller runs them in place of the single-node ones.
func (s *Stack) clusterSteps() []startStep {
	c, t := s.cluster, s.opts.StartTimeout
	steps := []startStep{
		{s.pg.roleName(), func(ctx context.Context) error { return s.pg.start(ctx, t) }},
		{c.standby.roleName(), func(ctx context.Context) error { return c.standby.start(ctx, t) }},
	}
	for _, z := range c.zk {
		steps = append(steps, startStep{z.name, func(ctx context.Context) error { return z.start(ctx, t) }})
	}
	steps = append(steps, startStep{"zookeeper quorum", func(ctx context.Context) error { return zkServing(ctx, c.zk, t) }})
	for _, n := range c.ch {
		steps = append(steps, startStep{n.name, func(ctx context.Context) error { return n.start(ctx, t) }})
	}
	steps = append(steps, startStep{s.s3.name, func(ctx context.Context) error { return s.s3.start(ctx, t) }})
	for _, g := range c.gateways {
		steps = append(steps, startStep{g.name, func(ctx context.Context) error { return g.start(ctx, t) }})
	}
	return steps
}

// clusterEngines are the cluster shape's supervised engines, in start order.
func (s *Stack) clusterEngines(mk func(name, url string, proc func() *process, start func(context.Context, time.Duration) error) *engine) []*engine {
	c := s.cluster
	out := s.pgEngines(mk)
	for _, z := range c.zk {
		out = append(out, mk(z.name, "tcp://"+z.addr(), func() *process { return z.proc }, z.start))
	}
	for _, n := range c.ch {
		out = append(out, mk(n.name, n.httpURL(), func() *process { return n.proc }, n.start))
	}
	out = append(out, mk(s.s3.name, s.s3.url(), func() *process { return s.s3.proc }, s.s3.start))
	for _, g := range c.gateways {
		out = append(out, mk(g.name, g.url(), func() *process { return g.proc }, g.start))
	}
	return append(out, s.temporal.engines(mk)...)
}

// clusterStops stops the cluster shape's engines in reverse dependency order, the nodes of one
// tier at once (each has its own timeout, and a dozen one after another outlast a test
// harness's patience): the S3 gateways, the ClickHouse nodes before their ZooKeepers, the
// standby before the primary.
func (s *Stack) clusterStops(timeout time.Duration) error {
	c := s.cluster
	var errs []error
	tier := func(stops ...func(time.Duration) error) {
		out := make([]error, len(stops))
		var wg sync.WaitGroup
		for i, stop := range stops {
			wg.Go(func() { out[i] = stop(timeout) })
		}
		wg.Wait()
		errs = append(errs, out...)
	}
	gateways := []func(time.Duration) error{s.s3.stop}
	for _, g := range c.gateways {
		gateways = append(gateways, g.stop)
	}
	tier(gateways...)
	var chs, zks []func(time.Duration) error
	for _, n := range c.ch {
		chs = append(chs, n.stop)
	}
	for _, z := range c.zk {
		zks = append(zks, z.stop)
	}
	tier(chs...)
	tier(zks...)
	tier(c.standby.stop)
	tier(s.pg.stop)
	return errors.Join(errs...)
}

// clusterPrepare clears what a killed runner left on the cluster's data and checks the
// installs the cluster shape needs beyond the single-node stack's.
func (s *Stack) clusterPrepare() error {
	errs := []error{checkZooKeeper(), s.cluster.standby.clearStalePid()}
	for _, n := range s.cluster.ch {
		errs = append(errs, n.stopOrphan())
	}
	return errors.Join(errs...)
}

// freeLowPorts returns n distinct free loopback ports below 32768 (under the kernel's usual
// ephemeral range, so outgoing connections do not take them either), picked at random.
func freeLowPorts(n int) ([]int, error) {
	out := make([]int, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("no free loopback port between 20000 and 32767")
		}
		l, err := net.Listen("tcp", hostPort(20000+rand.IntN(12768)))
		if err != nil {
			continue
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// freePorts returns n distinct free loopback ports, holding every listener until all are
// chosen so the kernel cannot hand one out twice.
func freePorts(n int) ([]int, error) {
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", loopback+":0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
