package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/splathost/splathost/internal/testenv"
)

// scaleRounds is how many alternated rounds each scale-out measure runs per stack; the report
// gives the median round.
const scaleRounds = 3

// scaleReplicas is the scaled-out stack's number of processes of each product binary.
const scaleReplicas = 2

// scaleStack is one of the two split stacks the scale-out measure compares.
type scaleStack struct {
	replicas int
	st       *testenv.Stack
	tenant   Tenant
	// addrs are the gateways' host:port, which the load's connections are spread over in turn,
	// as a connection-level load balancer would.
	addrs []string
}

// scaleRun is one measured round of one stack.
type scaleRun struct {
	res LoadResult
	cpu float64 // the machine's CPU busy fraction over the run
}

// scaleoutRows measures the throughput of the split stack with one process of each product
// binary against the same stack with scaleReplicas of each, both running on this machine at the
// same time (their stores apart), in alternated rounds: the customer read and the viewer session
// mint, with the machine's CPU use over each run (on a machine whose cores are already busy,
// more processes cannot add throughput).
func (r *runner) scaleoutRows(ctx context.Context) []Row {
	read := Row{Name: fmt.Sprintf("scale-out: GET /api/v1/external-user, split, %d of each vs 1 (bare: 1)", scaleReplicas), Unit: "req/s"}
	mint := Row{Name: fmt.Sprintf("scale-out: POST /api/editor/embed-sessions (viewer), split, %d of each vs 1 (bare: 1)", scaleReplicas), Unit: "req/s"}
	readyOne := Row{Name: "stack ready, cold data dir (split, 1 of each, scale-out measure)", Unit: "ms"}
	readyMany := Row{Name: fmt.Sprintf("stack ready, cold data dir (split, %d of each, scale-out measure)", scaleReplicas), Unit: "ms"}
	rows := func() []Row { return []Row{read, mint, readyOne, readyMany} }
	fail := func(err error) []Row {
		for _, row := range []*Row{&read, &mint} {
			if row.Err == nil {
				row.Err = err
			}
		}
		return rows()
	}

	var stacks []*scaleStack
	defer func() {
		for _, s := range stacks {
			if err := s.st.Failed(); err != nil {
				r.problems = append(r.problems, err)
			}
			if err := s.st.Stop(); err != nil {
				r.problems = append(r.problems, fmt.Errorf("stop stack (scale-out, %d of each): %w", s.replicas, err))
			}
		}
	}()
	for _, sc := range []struct {
		replicas int
		ready    *Row
	}{{1, &readyOne}, {scaleReplicas, &readyMany}} {
		s, err := r.startScaleStack(ctx, sc.replicas)
		if err != nil {
			sc.ready.Err = err
			return fail(err)
		}
		sc.ready.Value = float64(s.st.State.ReadyMillis)
		stacks = append(stacks, s)
	}

	for _, m := range []struct {
		row  *Row
		path string
		req  func(Tenant) Request
	}{
		{&read, "/api/v1/external-user", func(Tenant) Request { return Request{} }},
		{&mint, BareMintPath, func(t Tenant) Request {
			body, _ := json.Marshal(map[string]any{"publicKey": t.PublicKey, "type": "viewer"})
			return Request{Method: http.MethodPost, Body: body, Status: http.StatusCreated}
		}},
	} {
		runs := make([][]scaleRun, len(stacks))
		for round := range scaleRounds {
			// A/B, then B/A: neither side always runs first (a warmer cache, a quieter moment).
			order := []int{0, 1}
			if round%2 == 1 {
				order = []int{1, 0}
			}
			for _, i := range order {
				s := stacks[i]
				t := s.tenant
				if m.path == BareMintPath {
					t.ExternalUserID = "" // the anonymous viewer's mint, as P2 measures it
				}
				req := m.req(t)
				o := r.loadOptions(s.st.State.GatewayURL+m.path, req.headers(t), req)
				o.Addrs = s.addrs
				before, cpuErr := cpuTimes()
				res, err := RunLoad(ctx, o)
				if err != nil {
					m.row.Err = err
					return rows()
				}
				after, cpuErr2 := cpuTimes()
				run := scaleRun{res: res}
				if cpuErr == nil && cpuErr2 == nil {
					run.cpu = busyFraction(before, after)
				}
				runs[i] = append(runs[i], run)
				r.o.Log.Info("scale-out round", "path", m.path, "replicas", s.replicas, "round", round+1,
					"rps", int(res.RPS), "cpu", fmt.Sprintf("%.0f%%", 100*run.cpu))
			}
		}
		one, many := medianRun(runs[0]), medianRun(runs[1])
		m.row.Value, m.row.Bare = many.res.RPS, one.res.RPS
		m.row.Notes = fmt.Sprintf("median of %d alternated rounds, %d keep-alive connections over the gateways; 1 of each: %s, CPU %.0f%% busy; %d of each: %s, CPU %.0f%% busy",
			scaleRounds, r.o.Concurrency, one.res.Summary(), 100*one.cpu, scaleReplicas, many.res.Summary(), 100*many.cpu)
		for _, run := range append(slices.Clone(runs[0]), runs[1]...) {
			if total := run.res.OK + run.res.Failures(); run.res.OK == 0 || float64(run.res.Failures()) > maxFailureFraction*float64(total) {
				r.problems = append(r.problems, fmt.Errorf("%s: %d of %d requests failed: %s", m.row.Name, run.res.Failures(), total, run.res.Summary()))
				break
			}
		}
	}
	return rows()
}

// startScaleStack starts a split stack with replicas of each binary in a directory of its own
// (both stacks run at once) and provisions its tenant.
func (r *runner) startScaleStack(ctx context.Context, replicas int) (*scaleStack, error) {
	dir, err := r.freshDir("scale-" + strconv.Itoa(replicas))
	if err != nil {
		return nil, err
	}
	r.o.Log.Info("starting stack", "services", "split", "replicas", replicas, "dir", dir)
	st, err := testenv.StartStack(ctx, testenv.StackOptions{Dir: dir, Services: "split", Replicas: replicas,
		Runner: r.o.Runner, BinDir: r.o.BinDir, ReadyTimeout: r.o.ReadyTimeout, StopTimeout: r.o.StopTimeout,
		Env: append(slices.Clone(renditionsOff), limitsNeverRefuse...)})
	if err != nil {
		return nil, fmt.Errorf("start stack (split, %d of each): %w", replicas, err)
	}
	s := &scaleStack{replicas: replicas, st: st}
	gateways := st.State.GatewayURLs
	if len(gateways) == 0 {
		gateways = []string{st.State.GatewayURL}
	}
	if len(gateways) != replicas {
		return s, fmt.Errorf("stack with %d of each lists %d gateways", replicas, len(gateways))
	}
	for _, g := range gateways {
		s.addrs = append(s.addrs, strings.TrimPrefix(g, "http://"))
	}
	if s.tenant, err = SetupTenant(st.State.GatewayURL, st.State.AdminToken, "scale-"+strconv.Itoa(replicas)); err != nil {
		return s, err
	}
	// Every gateway answers the read (each reaches every replica).
	for _, g := range gateways {
		if err := s.tenant.CheckRead("scale-out read", g, "/api/v1/external-user", nil); err != nil {
			return s, err
		}
	}
	return s, nil
}

// medianRun is the run with the median throughput.
func medianRun(runs []scaleRun) scaleRun {
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b scaleRun) int {
		switch {
		case a.res.RPS < b.res.RPS:
			return -1
		case a.res.RPS > b.res.RPS:
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

// cpuSample is the machine's total and idle CPU time (jiffies, every core) at one moment.
type cpuSample struct{ total, idle uint64 }

// cpuTimes reads the machine's CPU times from /proc/stat.
func cpuTimes() (cpuSample, error) {
	var c cpuSample
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return c, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return c, err
		}
		c.total += n
		if i == 3 || i == 4 { // idle, iowait
			c.idle += n
		}
	}
	return c, nil
}

// busyFraction is the share of the CPU time between two samples that was not idle.
func busyFraction(before, after cpuSample) float64 {
	total := after.total - before.total
	if total == 0 {
		return 0
	}
	return 1 - float64(after.idle-before.idle)/float64(total)
}
