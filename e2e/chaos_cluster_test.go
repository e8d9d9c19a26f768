//go:build e2e && chaos

package e2e

// Issue 28, item 3: node faults in the cluster shape of the stack (`make chaos-cluster`, which
// sets SPLATHOST_E2E_CLUSTER=1; skipped on the single-node stack). Under one mixed load through
// a split of two of every product process behind a load balancer (commits, title patches,
// scene and asset reads, deletes, clones, view beacons), every node kind is killed with SIGKILL
// in turn, one table row each: a ClickHouse replica, a versitygw gateway, every Temporal role
// process the stack lists, one process of each product binary, and last the Postgres primary,
// twice (the second time the server the first promoted), each time promoted and the old primary
// rebuilt as its standby by the stack runner's commands. Each row: the answers that failed while the node was down,
// the time until a commit and an asset read succeed again, and, audited after the run, the
// acknowledged commits lost, the views lost or counted twice and the clones that never completed.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/ratelimit"
	"github.com/splathost/splathost/internal/testenv"
)

// clusterNode is one row of the table: a node and how to kill it. kill returns once the node is
// dead (it may record figures of its own in rep); the wait it returns blocks until the node serves again (restarted by the runner or the
// test, or replaced by a promoted standby).
type clusterNode struct {
	name   string
	kill   func(rep *chaosReport) (wait func() error, err error)
	absent bool
}

// clusterRow is what one row measured while its node was down, audited after the run.
type clusterRow struct {
	rep       *chaosReport
	acked     []string // commits acknowledged while the row ran
	scene     string   // the scene its view beacons went to
	accepted  int64    // beacons accepted
	gaveUp    int64    // beacons never accepted
	ambiguous atomic.Int64
	retries   atomic.Int64
}

// clusterClone is a clone the load started: done once it closed with success, closed when it
// was seen to close.
type clusterClone struct {
	row             int
	src, job, eu    string
	done            bool
	started, closed time.Time
}

// clusterChaos is the load and the rows of TestChaosClusterNodeKills.
type clusterChaos struct {
	t                *testing.T
	l                *engineLoad
	sp               *testenv.Split
	beacons          int
	between, downFor time.Duration
	beaconClient     *http.Client
	row              atomic.Int32 // the row running now, for the clones' attribution
	mu               sync.Mutex
	clones           []*clusterClone
}

// temporalRoles are the Temporal server's roles; the stack lists each role's processes as
// temporal-ROLE-N when it runs them apart (one row per process), and a role it runs inside the
// runner gets a row saying so.
var temporalRoles = []string{"frontend", "history", "matching", "worker"}

// TestChaosClusterNodeKills runs the cluster fault table (see the file's comment).
func TestChaosClusterNodeKills(t *testing.T) {
	if !env.State.Cluster {
		t.Skipf("the cluster fault table needs the cluster shape: set %s=1 (make chaos-cluster)", testenv.ClusterEnv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	public := "http://" + ln.Addr().String()
	sp := chaosSplit(t, func(o *testenv.SplitOptions) {
		o.Replicas = 2
		// Asset URLs name the balancer, so asset reads go through the split too.
		o.Config.PublicURL = public
		// Thousands of beacons from one session and a handful of busy customers stand in
		// for many browsers and integrations: the per-caller limits would refuse them.
		o.Config.RateLimit.APIPro, o.Config.RateLimit.Session = ratelimit.Limit{}, ratelimit.Limit{}
		o.Config.RateLimit.Visitors, o.Config.RateLimit.Views = ratelimit.Limit{}, ratelimit.Limit{}
	})
	for _, n := range []string{"media-worker", "media-worker-2"} {
		require.NoError(t, sp.AddMediaWorker(n))
	}
	t.Cleanup(testenv.Balance(ln, sp.URLs))

	c := &clusterChaos{t: t, sp: sp,
		between:      time.Duration(chaosScale("SPLATHOST_CHAOS_CLUSTER_SECONDS", 2, 6)) * time.Second,
		beaconClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 20 * time.Second},
		l: &engineLoad{base: public, tn: newTenant(t), hc: &http.Client{Timeout: 30 * time.Second},
			acked: map[string]string{}, deleted: map[string]bool{}, titles: map[string]string{}}}
	c.downFor = c.between
	c.row.Store(-1)
	for _, eu := range []string{"probe", "cloner-0", "cloner-1", "cloner-2"} {
		r := do(t, "PUT", "/api/v1/external-user", c.l.tn.keys(eu), map[string]any{})
		require.Equal(t, 200, r.Status, string(r.Raw))
	}
	nodes := c.nodes()
	present := 0
	for _, n := range nodes {
		if !n.absent {
			present++
		}
	}
	c.beacons = max(1, chaosScale("SPLATHOST_CHAOS_VIEWS", 500, 5000)/present)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	clients := chaosScale("SPLATHOST_CHAOS_CLUSTER_CLIENTS", 4, 8)
	for i := range clients {
		wg.Go(func() { c.l.client(fmt.Sprintf("e%d", i), stop) })
	}
	wg.Go(func() { c.cloner(stop) })
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopLoad)
	require.Eventually(t, func() bool {
		c.l.mu.Lock()
		defer c.l.mu.Unlock()
		return len(c.l.acked) >= clients
	}, time.Minute, 50*time.Millisecond, "the clients commit before the faults")

	// Reports print when the test ends, the last made first: made backwards, the table lists
	// the rows in the order of the kills.
	rows := make([]*clusterRow, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		rows[i] = &clusterRow{rep: newChaosReport(t, "cluster: kill -9 "+nodes[i].name)}
	}
	for i, n := range nodes {
		c.run(i, n, rows[i])
	}
	stopLoad()
	c.audit(rows)
}

// nodes is the table's rows, in the order they are killed: the engines' nodes the product
// dials first (whose loss it must route around), every Temporal role process, one process of
// each product binary (the first of its two), then the Postgres primary, twice: a double
// failover, each promoted and rebuilt by the stack runner.
func (c *clusterChaos) nodes() []clusterNode {
	nodes := []clusterNode{engineNode("clickhouse-1-1"), engineNode("versitygw-1")}
	for _, role := range temporalRoles {
		prefix := "temporal-" + role + "-"
		found := false
		for _, p := range env.State.Processes {
			if strings.HasPrefix(p.Name, prefix) {
				nodes, found = append(nodes, engineNode(p.Name)), true
			}
		}
		if !found {
			nodes = append(nodes, clusterNode{name: prefix + "N", absent: true})
		}
	}
	for _, name := range []string{"gateway", "user", "scene", "session", "worker", "media-worker"} {
		nodes = append(nodes, c.productNode(name))
	}
	return append(nodes, postgresFailover(1), postgresFailover(2))
}

// engineNode kills a node the stack runner supervises; the runner starts it again on the same
// data and ports.
func engineNode(name string) clusterNode {
	return clusterNode{name: name, kill: func(*chaosReport) (func() error, error) {
		pid, err := env.EnginePID(name)
		if err != nil {
			return nil, err
		}
		done := make(chan error, 1)
		go func() { _, err := env.KillEngine(name); done <- err }()
		// KillEngine's SIGKILL lands at once; the row's clock starts when the node is gone.
		for deadline := time.Now().Add(10 * time.Second); testenv.PIDRunning(pid) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		return func() error { return <-done }, nil
	}}
}

// productNode kills a process of the split and starts it again after downFor, as an
// orchestrator would after its restart delay; its twin keeps serving meanwhile.
func (c *clusterChaos) productNode(name string) clusterNode {
	return clusterNode{name: name, kill: func(*chaosReport) (func() error, error) {
		if err := c.sp.Kill(name); err != nil {
			return nil, err
		}
		t0 := time.Now()
		return func() error {
			time.Sleep(time.Until(t0.Add(c.downFor)))
			return c.sp.Start(name)
		}, nil
	}}
}

// run kills one row's node under the load while view beacons go to a scene of the row's own,
// and records in row what the clients saw until it served again.
func (c *clusterChaos) run(i int, n clusterNode, row *clusterRow) {
	t, l := c.t, c.l
	row.rep.start = time.Now()
	if n.absent {
		row.rep.note("not present: the stack lists no %s process", strings.TrimSuffix(n.name, "N"))
		row.rep.stopClock()
		return
	}
	c.row.Store(int32(i))
	before := l.ackedIDs()
	row.scene = publicScene(t, l.tn, "viewed")
	tok := mintToken(t, l.tn, "", map[string]any{"type": "viewer", "splatId": row.scene})
	// Half the row's beacons go out before the kill, half while the node is down and after.
	beacons := c.views(row, tok, 2*c.between)
	time.Sleep(c.between)

	down := &statusCounts{}
	l.down.Store(down)
	t0 := time.Now()
	wait, err := n.kill(row.rep)
	require.NoError(t, err, n.name)
	recovered := l.recovered(t, t0)
	require.NoError(t, wait(), n.name)
	back := time.Since(t0)
	// Errors count until the node is back and the product serves again, whichever is later.
	l.recovered(t, t0)
	l.down.Store(nil)
	beacons()
	row.acked = l.ackedSince(before)
	c.row.Store(-1)
	row.rep.stopClock()

	rep := row.rep
	rep.info("node back (ms)", float64(back.Milliseconds()))
	rep.info("until a commit and an asset read succeed (ms)", float64(recovered.Milliseconds()))
	rep.info("failed answers meanwhile", float64(down.count(func(s int) bool { return s >= 400 })+down.errs))
	rep.zero("500 answers (a node that is down is a 503 or 504)", float64(down.count(func(s int) bool { return s == 500 })))
	rep.note("answers from the kill until the product served again: %s", statuses(down))
}

// audit checks every row's promises once the load has stopped: its acknowledged commits are
// there (or deleted by an acknowledged delete), its views are in ClickHouse exactly once
// (through the Distributed table, every shard), its clones completed.
func (c *clusterChaos) audit(rows []*clusterRow) {
	t, l := c.t, c.l
	ctx := context.Background()
	live := map[string]bool{}
	for _, s := range liveScenes(t, l.tn.IntegrationID) {
		live[s.id] = true
	}
	// Clones close within minutes whatever was killed: a worker's activities are retried on
	// its twin, a history shard moves to the other host.
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		open := 0
		for _, cl := range c.clones {
			if !cl.done && !c.cloneClosed(cl) {
				open++
			}
		}
		if open == 0 {
			break
		}
	}
	var pending int64
	var err error
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if pending, err = analytics.Pending(ctx, env.Process.DB.Pool); err == nil && pending == 0 {
			break
		}
	}
	ch, err := analytics.Open(ctx, env.Config.ClickHouseAddr, env.Config.ClickHouseDB)
	require.NoError(t, err)
	defer ch.Close()
	counts := func(scene string) (rows, events, visitors uint64) {
		require.NoError(t, ch.QueryRow(ctx, "SELECT count(), uniqExact(event_id), uniqExact(visitor_id) FROM "+
			env.Config.ClickHouseDB+"."+analytics.EventsTable+" WHERE scene_id = ?", scene).Scan(&rows, &events, &visitors))
		return
	}
	for i, row := range rows {
		rep := row.rep
		if row.scene == "" {
			continue
		}
		lost := 0
		for _, id := range row.acked {
			if l.lost(id, live) {
				lost++
			}
		}
		started, unfinished := 0, 0
		var slowest time.Duration
		for _, cl := range c.clones {
			if cl.row == i {
				started++
				if !cl.done {
					unfinished++
				} else {
					slowest = max(slowest, cl.closed.Sub(cl.started))
				}
			}
		}
		// The Distributed table forwards to the other shard asynchronously: wait for every
		// accepted view to show, then a little longer for a late duplicate.
		var rs, evs, vis uint64
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			if rs, evs, vis = counts(row.scene); int64(vis) >= row.accepted {
				break
			}
		}
		time.Sleep(time.Second)
		rs, evs, vis = counts(row.scene)
		rep.info("commits acknowledged meanwhile", float64(len(row.acked)))
		rep.zero("acknowledged commits lost", float64(lost))
		rep.info("view beacons", float64(c.beacons))
		rep.zero("beacons never accepted", float64(row.gaveUp))
		rep.zero("views lost (accepted − visitors in ClickHouse)", max(0, float64(row.accepted)-float64(vis)))
		rep.zero("views stored twice (rows − distinct event ids)", float64(rs)-float64(evs))
		rep.atMost("views counted twice (events − visitors; retries of lost answers)", float64(evs)-float64(vis), float64(row.ambiguous.Load()))
		rep.info("clones started", float64(started))
		rep.zero("clones not completed", float64(unfinished))
		rep.info("slowest clone, request to close (ms)", float64(slowest.Milliseconds()))
		rep.check()
	}
	require.Zero(t, pending, "the view outbox drained")
	if len(l.bad5xx) > 0 {
		t.Logf("5xx other than 503 during the run: %s", strings.Join(slices.Clip(l.bad5xx), " | "))
	}
}
