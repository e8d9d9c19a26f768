package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/splathost/splathost/internal/affinity"
	"github.com/splathost/splathost/internal/testenv"
)

// DefaultTierCPU is the CPU share (in cores) each process of the tier under test gets in the
// capped scale measures: small enough that one replica is the bottleneck on 2 shared cores,
// so a second one shows what it buys, as it would on a machine with a core per replica.
const DefaultTierCPU = 0.25

// tierStack is the cluster-shape stack of the tier measures: 2 of each product binary, and
// tenants placed on the scene replicas (the gateways send an integration's requests to the
// replica its id hashes to).
type tierStack struct {
	st *testenv.Stack
	// gateways are the gateways' host:port; pids every measured process by name.
	gateways []string
	pids     map[string]int
	// order is every process's name in the stack's order.
	order []string
	// onFirst are targets of tenants the gateways send to the first scene replica, onSecond
	// one of a tenant on the second.
	onFirst  []Target
	onSecond Target
	// mint and beacon are a viewer mint and a view beacon of the first tenant (cost rows),
	// with their bodies.
	mint, beacon         Target
	mintBody, beaconBody []byte
}

// tierProcs are the product processes the tier measures need; they read the CPU time of every
// process the stack lists (engines too).
var tierProcs = []string{"gateway", "gateway-2", "scene", "scene-2", "user", "user-2", "session", "session-2", "postgres-primary"}

// withChildren says whether a process's CPU and memory include its descendants: Postgres serves
// each connection from a forked backend.
func withChildren(name string) bool { return strings.HasPrefix(name, "postgres") }

// scaleTierRows measures, on the cluster shape with 2 of each product binary, what a second
// gateway and a second scene service buy on GET /api/v1/splats/{id}, each in one run against
// one replica of that tier, in alternated rounds: once with every process of the tier capped
// at o.TierCPU cores (cgroup CPU quota: the simulation of a replica per node), once uncapped
// (what 2 shared cores show). "1 gateway" is every connection on the first gateway; "1 scene
// service" is two tenants that both hash to the first scene replica against two tenants on
// different replicas, through both gateways. Then the CPU each process spends per request of
// the API's main requests (cost rows), for the capacity model (docs/capacity.md).
func (r *runner) scaleTierRows(ctx context.Context) []Row {
	cores := r.o.tierCPU()
	capped := fmt.Sprintf("each capped at %.2f cores", cores)
	gwCap := Row{Name: "scale: gateways 2 vs 1, " + capped + ", GET /api/v1/splats/{id}, cluster (bare: 1)", Unit: "req/s"}
	scCap := Row{Name: "scale: scene services 2 vs 1, " + capped + ", GET /api/v1/splats/{id}, cluster (bare: 1)", Unit: "req/s"}
	gwFree := Row{Name: "scale: gateways 2 vs 1, uncapped on 2 shared cores, cluster (bare: 1)", Unit: "req/s"}
	scFree := Row{Name: "scale: scene services 2 vs 1, uncapped on 2 shared cores, cluster (bare: 1)", Unit: "req/s"}
	costRead := Row{Name: "cost: GET /api/v1/splats/{id}, cluster, 2 of each", Unit: "req/s"}
	costUser := Row{Name: "cost: GET /api/v1/external-user, cluster, 2 of each", Unit: "req/s"}
	costMint := Row{Name: "cost: POST /api/editor/embed-sessions (viewer), cluster, 2 of each", Unit: "req/s"}
	costView := Row{Name: "cost: POST /api/embed/views, cluster, 2 of each", Unit: "req/s"}
	ready := Row{Name: "stack ready, cold data dir (cluster, split, 2 of each)", Unit: "ms"}
	all := []*Row{&gwCap, &scCap, &gwFree, &scFree, &costRead, &costUser, &costMint, &costView}
	rows := func() []Row {
		out := make([]Row, 0, len(all)+1)
		for _, row := range all {
			out = append(out, *row)
		}
		return append(out, ready)
	}
	ts, err := r.startTierStack(ctx)
	if ts != nil && ts.st != nil {
		defer func() {
			if err := ts.st.Failed(); err != nil {
				r.problems = append(r.problems, err)
			}
			if err := ts.st.Stop(); err != nil {
				r.problems = append(r.problems, fmt.Errorf("stop stack (cluster tiers): %w", err))
			}
		}()
		ready.Value = float64(ts.st.State.ReadyMillis)
	}
	if err != nil {
		failRows(err, append(all, &ready)...)
		return rows()
	}
	both := []Target{ts.onFirst[0], ts.onSecond}
	one, two := tierSide{addrs: ts.gateways[:1], targets: both}, tierSide{addrs: ts.gateways, targets: both}
	sOne, sTwo := tierSide{addrs: ts.gateways, targets: ts.onFirst}, tierSide{addrs: ts.gateways, targets: both}
	for _, m := range []struct {
		row      *Row
		one, two tierSide
		capNames []string
	}{
		{&gwCap, one, two, []string{"gateway", "gateway-2"}},
		{&scCap, sOne, sTwo, []string{"scene", "scene-2"}},
		{&gwFree, one, two, nil},
		{&scFree, sOne, sTwo, nil},
	} {
		if ctx.Err() != nil {
			break
		}
		var release func() error
		if m.capNames != nil {
			release, err = capProcesses(ts.pids, m.capNames, cores)
			if err != nil {
				m.row.Err = fmt.Errorf("cap %s: %w", strings.Join(m.capNames, ", "), err)
				continue
			}
		}
		r.tierCompare(ctx, ts, m.row, m.one, m.two)
		if release != nil {
			if err := release(); err != nil {
				r.problems = append(r.problems, err)
			}
		}
	}
	for _, c := range []struct {
		row    *Row
		target Target
		req    Request
	}{
		{&costRead, ts.onFirst[0], Request{}},
		{&costUser, Target{Path: "/api/v1/external-user", Headers: ts.onFirst[0].Headers}, Request{}},
		{&costMint, ts.mint, Request{Method: http.MethodPost, Body: ts.mintBody, Status: http.StatusCreated}},
		{&costView, ts.beacon, Request{Method: http.MethodPost, Body: ts.beaconBody, Status: http.StatusAccepted}},
	} {
		if ctx.Err() != nil {
			break
		}
		run, err := r.tierRun(ctx, ts, tierSide{addrs: ts.gateways, targets: []Target{c.target}}, c.req)
		if err != nil {
			c.row.Err = err
			continue
		}
		c.row.Value = run.res.RPS
		c.row.Notes = fmt.Sprintf("%s; CPU per request: %s; RSS after it (MiB): %s", run.res.Summary(), run.cpuNote(), strings.Join(run.rss, ", "))
	}
	return rows()
}

// tierSide is one side of a tier comparison: the gateways the connections go to and the
// requests they send.
type tierSide struct {
	addrs   []string
	targets []Target
}

// tierResult is one load run with the CPU time each measured process spent in it.
type tierResult struct {
	res LoadResult
	cpu map[string]time.Duration
	// order names the processes in the stack's order; rss is each one's RSS (MiB) after
	// the run.
	order []string
	rss   []string
}

// cpuNote is the CPU per accepted request of each process that spent any, in µs.
func (t tierResult) cpuNote() string {
	if t.res.Accepted == 0 {
		return "no request accepted"
	}
	var parts []string
	for _, name := range t.order {
		if d := t.cpu[name]; d >= time.Duration(t.res.Accepted)*time.Microsecond/10 {
			parts = append(parts, fmt.Sprintf("%s %s", name, fmtMicros(d/time.Duration(t.res.Accepted))))
		}
	}
	return strings.Join(parts, ", ")
}

// tierRun runs one load of side and reads each process's CPU time around it.
func (r *runner) tierRun(ctx context.Context, ts *tierStack, side tierSide, req Request) (tierResult, error) {
	o := r.loadOptions("http://"+ts.gateways[0]+side.targets[0].Path, side.targets[0].Headers, req)
	o.Addrs, o.Targets = side.addrs, side.targets
	before := map[string]time.Duration{}
	for name, pid := range ts.pids {
		before[name] = processCPU(pid, withChildren(name))
	}
	res, err := RunLoad(ctx, o)
	out := tierResult{res: res, cpu: map[string]time.Duration{}, order: ts.order}
	for name, pid := range ts.pids {
		out.cpu[name] = processCPU(pid, withChildren(name)) - before[name]
	}
	for _, name := range ts.order {
		if m, err := ReadMemory(ts.pids[name], withChildren(name)); err == nil {
			out.rss = append(out.rss, fmt.Sprintf("%s %.1f", name, float64(m.RSSKiB)/1024))
		}
	}
	if err == nil && (res.OK == 0 || float64(res.Failures()) > maxFailureFraction*float64(res.OK+res.Failures())) {
		err = fmt.Errorf("%d of %d requests failed: %s", res.Failures(), res.OK+res.Failures(), res.Summary())
	}
	return out, err
}

// tierCompare runs one and two in alternated rounds and sets row to two's median rate against
// one's.
func (r *runner) tierCompare(ctx context.Context, ts *tierStack, row *Row, one, two tierSide) {
	var runs [2][]tierResult
	for round := range r.o.rounds() {
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			run, err := r.tierRun(ctx, ts, []tierSide{one, two}[i], Request{})
			if err != nil {
				row.Err = err
				return
			}
			runs[i] = append(runs[i], run)
			r.o.Log.Info("scale round", "row", row.Name, "replicas", i+1, "round", round+1, "rps", int(run.res.RPS))
		}
	}
	mid := func(rs []tierResult) tierResult {
		s := slices.Clone(rs)
		slices.SortFunc(s, func(a, b tierResult) int { return int(a.res.RPS - b.res.RPS) })
		return s[len(s)/2]
	}
	a, b := mid(runs[0]), mid(runs[1])
	row.Value, row.Bare = b.res.RPS, a.res.RPS
	rates := func(rs []tierResult) string {
		var s []string
		for _, x := range rs {
			s = append(s, fmt.Sprintf("%.0f", x.res.RPS))
		}
		return strings.Join(s, "/")
	}
	row.Notes = fmt.Sprintf("median of %d alternated rounds, %d keep-alive connections; 1: %s req/s (%s), CPU per request %s; 2: %s req/s (%s), CPU per request %s",
		r.o.rounds(), r.o.Concurrency, rates(runs[0]), a.res.Summary(), a.cpuNote(), rates(runs[1]), b.res.Summary(), b.cpuNote())
}

// startTierStack starts the cluster shape with 2 of each binary and places tenants with a
// scene each on the scene replicas.
func (r *runner) startTierStack(ctx context.Context) (*tierStack, error) {
	dir, err := r.freshDir("scale-cluster")
	if err != nil {
		return nil, err
	}
	r.o.Log.Info("starting stack", "shape", "cluster", "services", "split", "replicas", 2, "dir", dir)
	st, err := testenv.StartStack(ctx, testenv.StackOptions{Dir: dir, Services: "split", Replicas: 2, Cluster: true,
		Runner: r.o.Runner, BinDir: r.o.BinDir, ReadyTimeout: max(r.o.ReadyTimeout, 8*time.Minute), StopTimeout: r.o.StopTimeout,
		Env: append(slices.Clone(renditionsOff), limitsNeverRefuse...)})
	if err != nil {
		return nil, fmt.Errorf("start stack (cluster, 2 of each): %w", err)
	}
	ts := &tierStack{st: st, pids: map[string]int{}}
	for _, p := range st.State.Processes {
		if p.PID > 0 {
			ts.pids[p.Name] = p.PID
			ts.order = append(ts.order, p.Name)
		}
	}
	for _, name := range tierProcs {
		if ts.pids[name] == 0 {
			return ts, fmt.Errorf("the cluster stack lists no process %s", name)
		}
	}
	if len(st.State.GatewayURLs) != 2 {
		return ts, fmt.Errorf("the cluster stack lists %d gateways, want 2", len(st.State.GatewayURLs))
	}
	for _, g := range st.State.GatewayURLs {
		ts.gateways = append(ts.gateways, strings.TrimPrefix(g, "http://"))
	}
	gw := st.State.GatewayURL
	var first []Tenant
	var second *Tenant
	for i := 0; len(first) < 2 || second == nil; i++ {
		if i == 24 {
			return ts, errors.New("24 tenants did not fill both scene replicas")
		}
		t, err := SetupTenant(gw, st.State.AdminToken, fmt.Sprintf("tier-%d", i))
		if err != nil {
			return ts, err
		}
		id, err := t.NewScene(gw)
		if err != nil {
			return ts, err
		}
		target := Target{Path: "/api/v1/splats/" + id, Headers: t.Headers()}
		switch affinity.Replica(t.IntegrationID, 2) {
		case 0:
			if len(first) < 2 {
				first = append(first, t)
				ts.onFirst = append(ts.onFirst, target)
			}
		default:
			if second == nil {
				second, ts.onSecond = &t, target
			}
		}
		if len(first) == 1 && ts.mint.Path == "" {
			if err = ts.viewerTargets(gw, t, id); err != nil {
				return ts, err
			}
		}
	}
	return ts, nil
}

// viewerTargets sets the viewer session mint and the view beacon of tenant t's scene id (made
// public) with their bodies.
func (ts *tierStack) viewerTargets(gw string, t Tenant, id string) error {
	token, err := t.viewerSession(gw, id)
	if err != nil {
		return err
	}
	ts.mintBody, _ = json.Marshal(map[string]any{"publicKey": t.PublicKey, "type": "viewer"})
	ts.beaconBody, _ = json.Marshal(map[string]any{"splatId": id, "visitorId": "bench-visitor"})
	ts.mint = Target{Path: BareMintPath, Headers: map[string]string{"Authorization": "Bearer " + t.SecretKey}}
	ts.beacon = Target{Path: BareViewsPath, Headers: map[string]string{"Authorization": "Bearer " + token}}
	return nil
}
