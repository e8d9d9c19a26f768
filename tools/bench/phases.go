package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/splathost/splathost/internal/testenv"
)

// phase starts a stack in mode, records its ready time in ready, runs measure against it and
// stops it. It reports whether the stack started.
func (r *runner) phase(ctx context.Context, mode string, ready *Row, measure func(*testenv.Stack)) bool {
	return r.phaseOf(ctx, testenv.StackOptions{Services: mode}, ready, measure)
}

// renditionsOff is the environment of a stack whose measures are not the rendition pipeline's:
// no committed scene gets a rendition. On two cores a conversion takes a core from whatever is
// measured beside it and after it (a 200 MB .splat converts for minutes), and in the shape we
// ship the media workers are their own binary on their own machines; the pipeline's cost is
// measured alone (renditionRows, the first-frame phase).
var renditionsOff = []string{"SPLATHOST_RENDITION_MIN_BYTES=" + strconv.Itoa(math.MaxInt)}

// phaseOf is phase with more of the stack's options (its gateway and session replicas). With
// so.Dir empty the stack runs on the run's main directory (the cold and warm restarts and the
// all-in-one phase share it); a phase that names its own directory (coldPhase) starts cold, so
// nothing a previous phase left running in the background (conversions, retention workflows,
// ClickHouse merging 10 M events) runs beside its measures, and the directory is removed after
// it unless the logs are kept. Stacks run with renditionsOff and limitsNeverRefuse unless so.Env
// says otherwise.
func (r *runner) phaseOf(ctx context.Context, so testenv.StackOptions, ready *Row, measure func(*testenv.Stack)) bool {
	mode := so.Services
	if err := ctx.Err(); err != nil {
		ready.Err = err
		return false
	}
	if so.Dir == "" {
		so.Dir = r.dir
	}
	so.Env = append(append(slices.Clone(renditionsOff), limitsNeverRefuse...), so.Env...)
	log := r.o.Log.With("services", mode)
	log.Info("starting stack", "dir", so.Dir)
	so.Runner, so.BinDir, so.ReadyTimeout, so.StopTimeout = r.o.Runner, r.o.BinDir, r.o.ReadyTimeout, r.o.StopTimeout
	if so.Dir != r.dir {
		defer r.removeFresh(so.Dir)
	}
	st, err := testenv.StartStack(ctx, so)
	if err != nil {
		ready.Err = fmt.Errorf("start stack (%s): %w", mode, err)
		log.Error("stack did not start", "err", err)
		return false
	}
	ready.Value = float64(st.State.ReadyMillis)
	log.Info("stack ready", "readyMillis", st.State.ReadyMillis)
	measure(st)
	if err := st.Failed(); err != nil {
		r.problems = append(r.problems, err)
	}
	log.Info("stopping stack")
	if err := st.Stop(); err != nil {
		r.problems = append(r.problems, fmt.Errorf("stop stack (%s): %w", mode, err))
	}
	return true
}

// memoryRows waits for the stack to idle, then reads the memory of every listed process.
func (r *runner) memoryRows(ctx context.Context, st *testenv.Stack, mode string) []Row {
	total := Row{Name: "idle RSS total (" + mode + ")", Unit: "MiB", Goal: GoalStackRSS}
	select {
	case <-ctx.Done():
		total.Err = ctx.Err()
		return []Row{total}
	case <-time.After(r.o.Idle):
	}
	var rows []Row
	var pss int64
	for _, p := range st.State.Processes {
		row := Row{Name: "idle RSS " + p.Name + " (" + mode + ")", Unit: "MiB"}
		if mode == "split" && serviceNames[p.Name] {
			row.Goal = GoalServiceRSS
		}
		// Postgres serves each connection from a forked backend that belongs to it; no other
		// process's children are its own (the runner's children are the other rows).
		withChildren := p.Name == "postgres"
		m, err := ReadMemory(p.PID, withChildren)
		if err != nil {
			row.Err = fmt.Errorf("read memory of %s (pid %d): %w", p.Name, p.PID, err)
			total.Err = errors.New("a process could not be read")
			rows = append(rows, row)
			continue
		}
		row.Value = kibToMiB(m.RSSKiB)
		total.Value += row.Value
		pss += m.PSSKiB
		switch p.Name {
		case "postgres":
			row.Notes = fmt.Sprintf("postmaster + %d child processes; summed RSS counts shared buffers once per process, PSS %.1f MiB",
				m.Processes-1, kibToMiB(m.PSSKiB))
		case "stack":
			row.Notes = "runner with the in-process Temporal server and UI"
		case "splathost":
			row.Notes = "gateway, user, scene, session and worker in one process"
		}
		rows = append(rows, row)
	}
	if pss > 0 {
		total.Notes = fmt.Sprintf("PSS %.1f MiB", kibToMiB(pss))
	}
	return append(rows, total)
}

func kibToMiB(k int64) float64 { return float64(k) / 1024 }

// failRows marks every row of a measure failed with err: its stack or its set-up failed, so
// none of them was measured.
func failRows(err error, rows ...*Row) {
	for _, row := range rows {
		row.Err = err
	}
}

// withTenant sets up the tenant of a phase's measures and runs them, or marks their rows failed
// when the setup fails.
func (r *runner) withTenant(st *testenv.Stack, mode string, measure func(Tenant), rows ...*Row) {
	t, err := SetupTenant(st.State.GatewayURL, st.State.AdminToken, mode)
	if err != nil {
		failRows(fmt.Errorf("tenant setup: %w", err), rows...)
		return
	}
	measure(t)
}

// throughput measures the bare server and then the gateway, both fed the same customer read by
// the same load generator against the same Postgres.
func (r *runner) throughput(ctx context.Context, st *testenv.Stack, mode string, t Tenant, row *Row) {
	r.compare(ctx, st, mode, t, row, "/api/v1/external-user", BarePath, t.CheckRead, Request{})
}

// compare measures the gateway's path against the bare server's barePath in alternated rounds
// (RunAB), both fed the tenant's headers by the same load generator against the same Postgres;
// check verifies each answers the real read (not some cheaper error) before it is loaded. The
// bare server runs for the whole comparison, as the stack does. It returns both sides' median
// results (zero when a run did not happen; row.Err then says why).
func (r *runner) compare(ctx context.Context, st *testenv.Stack, mode string, t Tenant, row *Row, path, barePath string,
	check func(name, base, path string, extra map[string]string) error, req Request) (prodRes, bareRes LoadResult) {
	log := r.o.Log.With("services", mode)
	if err := check("gateway read", st.State.GatewayURL, path, nil); err != nil {
		row.Err = err
		return
	}
	b, err := StartBareServer(ctx, r.o.Exe, st.State.PostgresURL, r.o.PoolSize, filepath.Join(r.dir, "bare-server-"+mode+".log"))
	if err != nil {
		row.Err = err
		return
	}
	defer func() {
		if stopErr := b.Stop(); stopErr != nil {
			r.problems = append(r.problems, fmt.Errorf("stop bare server (%s): %w", mode, stopErr))
		}
	}()
	extra := map[string]string{BareIntegrationHeader: t.IntegrationID}
	if err := check("bare server read", b.URL, barePath, extra); err != nil {
		row.Err = err
		return
	}
	bareHeaders := req.headers(t)
	for k, v := range extra {
		bareHeaders[k] = v
	}
	prod := Side{Name: "gateway", Load: r.loadOptions(st.State.GatewayURL+path, req.headers(t), req), PIDs: productPIDs(st)}
	bare := Side{Name: "bare", Load: r.loadOptions(b.URL+barePath, bareHeaders, req), PIDs: []int{b.proc.Pid()}}
	for _, p := range st.State.Processes {
		if p.Name == "postgres" {
			prod.DBPID, bare.DBPID = p.PID, p.PID
		}
	}
	log.Info("loading gateway and bare server in alternated rounds", "path", path, "rounds", r.o.rounds())
	prodSide, bareSide, err := RunAB(ctx, r.o.rounds(), prod, bare)
	if err != nil {
		row.Err = fmt.Errorf("load: %w", err)
		return
	}
	if err := st.Failed(); err != nil {
		row.Err = err
		return
	}
	if r.o.ProfileDir != "" {
		// Named after the row (its route template, not the path with a scene id).
		label := strings.Trim(strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
				return r
			}
			return '_'
		}, row.Name), "_")
		if err := profileProduct(ctx, st, prod, r.o.ProfileDir, label); err != nil {
			r.problems = append(r.problems, fmt.Errorf("profile %s: %w", label, err))
		}
	}
	prodRes, bareRes = prodSide.LoadResult, bareSide.LoadResult
	log.Info("measured", "path", path, "rps", int(prodRes.RPS), "bareRps", int(bareRes.RPS))
	row.Value, row.Bare = prodRes.RPS, bareRes.RPS
	row.Sides = []SideResult{prodSide, bareSide}
	row.Notes = fmt.Sprintf("gateway %s, rounds %s, %s; bare %s, rounds %s, %s", prodRes.Summary(), fmtRounds(prodSide.RoundRPS),
		prodSide.CPUNote(), bareRes.Summary(), fmtRounds(bareSide.RoundRPS), bareSide.CPUNote())
	for _, res := range []struct {
		name string
		LoadResult
	}{{"gateway", prodRes}, {"bare server", bareRes}} {
		switch total := res.OK + res.Failures(); {
		case res.OK == 0:
			row.Err = fmt.Errorf("%s: no successful request (%s)", res.name, res.Summary())
		case float64(res.Failures()) > maxFailureFraction*float64(total):
			r.problems = append(r.problems, fmt.Errorf("%s, %s: %d of %d requests failed: %s",
				row.Name, res.name, res.Failures(), total, res.Summary()))
		}
	}
	return prodRes, bareRes
}

// productPIDs are the stack's processes that answer API requests: the gateway(s) and the
// services, or the one all-in-one process.
func productPIDs(st *testenv.Stack) []int {
	var pids []int
	for _, p := range st.State.Processes {
		if isProductProcess(p.Name) {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// isProductProcess reports whether a stack process answers API requests (replicas included).
func isProductProcess(name string) bool {
	for _, prefix := range []string{"gateway", "user", "scene", "session", "splathost"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

func fmtRounds(rps []float64) string {
	parts := make([]string, len(rps))
	for i, v := range rps {
		parts[i] = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strings.Join(parts, "/")
}

func (r *runner) loadOptions(url string, headers map[string]string, req Request) LoadOptions {
	return LoadOptions{
		URL: url, Headers: headers, Concurrency: r.o.Concurrency, Warmup: r.o.Warmup,
		Duration: r.o.Duration, MaxRequests: r.o.MaxRequests, Timeout: r.o.Timeout, Request: req,
	}
}

// cleanup removes the data directory unless asked to keep it.
func (r *runner) cleanup() {
	if r.o.Keep || r.keepLogs {
		r.o.Log.Info("data and logs kept", "dir", r.dir, "becauseAMeasureFailed", r.keepLogs)
		return
	}
	// Postgres has exited by now, but give a straggler's last write a moment rather than fail.
	var err error
	for range 5 {
		if err = os.RemoveAll(r.dir); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.problems = append(r.problems, fmt.Errorf("remove %s: %w", r.dir, err))
}

// coldPhase is phaseOf on a directory of its own named name (freshDir): the stack starts cold
// and inherits nothing another phase left running.
func (r *runner) coldPhase(ctx context.Context, name string, so testenv.StackOptions, ready *Row, measure func(*testenv.Stack)) bool {
	dir, err := r.freshDir(name)
	if err != nil {
		ready.Err = err
		return false
	}
	so.Dir = dir
	return r.phaseOf(ctx, so, ready, measure)
}

// freshDir is the data directory of a phase that starts cold, under the run's directory (so the
// run's cleanup and -keep cover it). The postgres user must reach it.
func (r *runner) freshDir(name string) (string, error) {
	dir := filepath.Join(r.dir, name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// removeFresh removes a cold phase's directory once its stack has stopped, so a run's disk use is
// its largest phase, not their sum; kept when the run keeps its data or a measure failed.
func (r *runner) removeFresh(dir string) {
	if r.o.Keep || r.keepLogs {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		r.problems = append(r.problems, fmt.Errorf("remove %s: %w", dir, err))
	}
}
