//go:build e2e

package e2e

// The fault and abuse suite (issue 12): each case drives the real stack (split binaries killed
// with SIGKILL, ClickHouse crashed, Postgres backends terminated, hostile requests) and records
// its numbers through a chaosReport. `make chaos` builds with the `chaos` tag (full scale, every
// case) and prints the table; `make test` runs the short form (small scale, the cases that hold
// on this branch). The numbers go to $SPLATHOST_CHAOS_RESULTS as JSON lines, which
// `bin/bench chaos-report FILE` (and `make bench`) prints as a table.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/restclient"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
)

// chaosScale is the size of a case: $name when set, else full under `make chaos` and short in
// `make test`.
func chaosScale(name string, short, full int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	if chaosFull {
		return full
	}
	return short
}

// chaosReport collects one case's figures. Promises are checked at the end, all at once, so a
// failing case still reports every number it measured.
type chaosReport struct {
	t       *testing.T
	name    string
	start   time.Time
	mu      sync.Mutex
	figures []testenv.ChaosFigure
	notes   []string
	// took, when set (stopClock), is the case's duration, else the time until the test ends.
	took time.Duration
}

// newChaosReport starts a case; its result is written and logged when the test ends.
func newChaosReport(t *testing.T, name string) *chaosReport {
	r := &chaosReport{t: t, name: name, start: time.Now()}
	t.Cleanup(r.finish)
	return r
}

// info records a figure that promises nothing (context: how much was sent, how many kills).
func (r *chaosReport) info(name string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.figures = append(r.figures, testenv.ChaosFigure{Name: name, Value: v, OK: true})
}

// promise records a figure with its promise and whether it held.
func (r *chaosReport) promise(name string, v float64, want string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.figures = append(r.figures, testenv.ChaosFigure{Name: name, Value: v, Want: want, OK: ok})
}

// zero records a figure that must be 0.
func (r *chaosReport) zero(name string, v float64) { r.promise(name, v, "= 0", v == 0) }

// equal records a figure that must equal want.
func (r *chaosReport) equal(name string, v, want float64) {
	r.promise(name, v, "= "+strconv.FormatFloat(want, 'f', -1, 64), v == want)
}

// atMost records a figure that must not exceed max.
func (r *chaosReport) atMost(name string, v, max float64) {
	r.promise(name, v, "≤ "+strconv.FormatFloat(max, 'f', -1, 64), v <= max)
}

// timeAtMost is atMost for a duration: a speed promise, which `make chaos` (chaosFull, run on a
// machine of its own) holds the product to; under `make test`, whose machine may be new, loaded
// or small, the figure is reported and fails nothing (a test never fails because the machine is
// slow).
func (r *chaosReport) timeAtMost(name string, v, max float64) {
	if chaosFull {
		r.atMost(name, v, max)
		return
	}
	r.info(name+" [promise ≤ "+strconv.FormatFloat(max, 'f', -1, 64)+" under make chaos]", v)
}

// note adds a line to the case's notes.
func (r *chaosReport) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// stopClock ends the case's time now, for a case whose figures an audit completes later.
func (r *chaosReport) stopClock() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.took = time.Since(r.start)
}

// check fails the test for every broken promise recorded so far.
func (r *chaosReport) check() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.figures {
		if !f.OK {
			r.t.Errorf("%s: %s = %v, promised %s", r.name, f.Name, f.Value, f.Want)
		}
	}
}

func (r *chaosReport) finish() {
	r.mu.Lock()
	took := time.Since(r.start)
	if r.took > 0 {
		took = r.took
	}
	res := testenv.ChaosResult{Case: r.name, Passed: !r.t.Failed(), Seconds: took.Seconds(),
		Figures: r.figures, Notes: strings.Join(r.notes, "; ")}
	r.mu.Unlock()
	for _, f := range res.Figures {
		res.Passed = res.Passed && f.OK
	}
	var b strings.Builder
	_, _ = testenv.WriteChaosTable(&b, []testenv.ChaosResult{res})
	r.t.Log("\n" + b.String())
	if err := testenv.AppendChaosResult(res); err != nil {
		r.t.Errorf("write chaos results: %v", err)
	}
}

// statusCounts tallies answers by class, safely from many goroutines.
type statusCounts struct {
	mu       sync.Mutex
	byStatus map[int]int
	errs     int
	lastErr  string
}

func (s *statusCounts) add(status int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byStatus == nil {
		s.byStatus = map[int]int{}
	}
	if err != nil {
		s.errs++
		s.lastErr = err.Error()
		return
	}
	s.byStatus[status]++
}

// count sums the answers whose status satisfies keep.
func (s *statusCounts) count(keep func(int) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for st, c := range s.byStatus {
		if keep(st) {
			n += c
		}
	}
	return n
}

func (s *statusCounts) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%v, %d transport errors (last: %s)", s.byStatus, s.errs, s.lastErr)
}

// chaosSplit runs the split binaries against the shared test stack on a task queue of their
// own, so killing them stalls only this test's work; logs go to the stack's directory.
func chaosSplit(t *testing.T, mutate func(*testenv.SplitOptions)) *testenv.Split {
	t.Helper()
	// Logs live with the stack's, so SPLATHOST_KEEP_TEST_DIR keeps them for a post-mortem.
	dir := filepath.Join(env.Dir, "chaos-"+ids.New())
	require.NoError(t, os.MkdirAll(dir, 0o755))
	o := testenv.SplitOptions{Config: env.Config, LogDir: dir, TaskQueue: "chaos-" + ids.New()}
	if mutate != nil {
		mutate(&o)
	}
	// A free port picked for a child can be taken by another process before the child binds it
	// (tests of other packages run beside this one): start again on new ports.
	var sp *testenv.Split
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if sp, err = testenv.StartSplit(o); err == nil {
			break
		}
		t.Logf("split start, attempt %d: %v", attempt+1, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		sp.Stop()
		if t.Failed() {
			for _, n := range testenv.SplitNames {
				t.Logf("%s log (%s):\n%s", n, dir, testenv.LogTail(filepath.Join(dir, n+".log"), 15))
			}
		}
	})
	return sp
}

// sceneRow is what the audit needs of a scene.
type sceneRow struct {
	id, owner              string
	bytes                  int64
	slot, archived         bool
	splatURL, image, depth string
	lodFolder              string
	assets                 []string
}

// liveScenes reads every scene row of an integration.
func liveScenes(t *testing.T, integrationID string) []sceneRow {
	t.Helper()
	rows, err := env.Process.DB.Pool.Query(context.Background(), `SELECT id, owner_id, file_size_bytes, holds_splat_slot,
		splat_url, image_url, coalesce(thumbnail_depth_url, ''), coalesce(lod_folder_key, ''), coalesce(asset_keys, '[]'::jsonb), archived_at IS NOT NULL
		FROM scenes WHERE integration_id = $1`, integrationID)
	require.NoError(t, err)
	defer rows.Close()
	var out []sceneRow
	for rows.Next() {
		var s sceneRow
		require.NoError(t, rows.Scan(&s.id, &s.owner, &s.bytes, &s.slot, &s.splatURL, &s.image, &s.depth, &s.lodFolder, &s.assets, &s.archived))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// owns reports whether key is one of the scene's stored objects: the sealed copies of its
// uploads (objectkeys.Sealed; the upload objects themselves belong to nothing once committed),
// its LOD folder's, its clone copies and its rendition folder.
func (s sceneRow) owns(key string) bool {
	if s.lodFolder != "" && strings.HasPrefix(key, objectkeys.Sealed(s.lodFolder+"/")) {
		return true
	}
	for _, u := range []string{s.splatURL, s.image, s.depth} {
		if k, ok := strings.CutPrefix(u, env.Config.AssetBase()+"/"); ok && objectkeys.Sealed(k) == key {
			return true
		}
	}
	for _, a := range s.assets {
		if objectkeys.Sealed(a) == key {
			return true
		}
	}
	// A clone's copies live under its job's prefix, named by the clone's id; renditions under
	// the scene's id.
	return strings.Contains(key, "/clone/"+s.id+"/") || strings.Contains(key, "/rendition/"+s.id+"/")
}

// openTickets are the prefixes of an integration's uncommitted upload tickets, with their
// sealed folders (a commit in flight seals before it commits).
func openTickets(t *testing.T, integrationID string) []string {
	t.Helper()
	rows, err := env.Process.DB.Pool.Query(context.Background(),
		`SELECT prefix FROM upload_tickets WHERE integration_id = $1 AND committed_at IS NULL`, integrationID)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		require.NoError(t, rows.Scan(&p))
		out = append(out, p, objectkeys.Sealed(p))
	}
	require.NoError(t, rows.Err())
	return out
}

// objectAudit compares the bucket under an integration's prefix with its scene rows and open
// upload tickets: orphans are objects that belong to neither (stored outside every cap),
// missing are scenes whose splat file is gone.
func objectAudit(t *testing.T, st *objectstore.Store, integrationID string) (orphans, missing []string, objects int) {
	t.Helper()
	scenes := liveScenes(t, integrationID)
	open := openTickets(t, integrationID)
	keys := objectsUnder(t, st, "i/"+integrationID+"/")
	present := map[string]bool{}
	for _, k := range keys {
		owned := slices.ContainsFunc(open, func(p string) bool { return strings.HasPrefix(k, p) })
		for _, s := range scenes {
			if s.owns(k) {
				owned = true
				// The splat file itself when the URL names a store key; else any object.
				stored, inStore := strings.CutPrefix(s.splatURL, env.Config.AssetBase()+"/")
				if !inStore || objectkeys.Sealed(stored) == k {
					present[s.id] = true
				}
			}
		}
		if !owned {
			orphans = append(orphans, k)
		}
	}
	for _, s := range scenes {
		if !present[s.id] {
			missing = append(missing, s.id)
		}
	}
	return orphans, missing, len(keys)
}

// runSweeps backdates the integration's upload tickets past the sweep's margin and its open
// purge rows past the re-drive's (a row whose workflow start a kill lost is left to the writer
// for a minute), then runs the orphan sweep and the purge re-drive on the test stack's own
// worker, as their schedules would once that time has passed.
func runSweeps(t *testing.T, integrationID string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Process.DB.Pool.Exec(ctx,
		`UPDATE upload_tickets SET expires_at = now() - interval '3 hours' WHERE integration_id = $1`, integrationID)
	require.NoError(t, err)
	_, err = env.Process.DB.Pool.Exec(ctx,
		`UPDATE asset_purges SET created_at = now() - interval '2 minutes' WHERE integration_id = $1 AND done_at IS NULL`, integrationID)
	require.NoError(t, err)
	run := func(name string, fn, in any) {
		r, err := env.Process.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: "chaos-" + name + "-" + ids.New(), TaskQueue: env.Config.TaskQueue}, fn, in)
		require.NoError(t, err)
		wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		require.NoError(t, r.Get(wait, nil), name)
	}
	// The bucket sweep without its age guard: the audit wants every stray gone now.
	run("sweep", workflows.SweepOrphanUploads, workflows.SweepInput{StrayMinAge: time.Nanosecond})
	// Re-drive until every open row of this integration has been offered: the re-drive takes
	// a bounded batch of the rows offered least recently, and other cases' rows may be ahead.
	var since time.Time
	require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT now()`).Scan(&since))
	for range 50 {
		run("redrive", workflows.RedrivePurges, workflows.RedriveInput{})
		var left int
		require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM asset_purges WHERE integration_id = $1
			AND done_at IS NULL AND (redriven_at IS NULL OR redriven_at < $2)`, integrationID, since).Scan(&left))
		if left == 0 {
			return
		}
	}
	t.Fatal("the re-drive never offered every open row of the integration")
}

// usageAudit compares what each named customer (GET /api/v1/external-user/usage) and the
// account (the operator API) are charged with the sum of their scene rows: the absolute byte
// and scene-count differences, summed over the customers.
func usageAudit(t *testing.T, tn tenant, customers ...string) (customerBytes, customerScenes, accountBytes, accountScenes int64) {
	t.Helper()
	scenes := liveScenes(t, tn.IntegrationID)
	// A customer's splats.used is its live (unarchived) scenes, the spec's "live count of scenes
	// the customer owns"; the account's splatCount is the scenes holding a scene slot (a clone
	// takes one on its first publish).
	type sum struct{ bytes, n int64 }
	per := map[string]*sum{}
	var total sum
	for _, s := range scenes {
		if per[s.owner] == nil {
			per[s.owner] = &sum{}
		}
		per[s.owner].bytes += s.bytes
		total.bytes += s.bytes
		if !s.archived {
			per[s.owner].n++
		}
		if s.slot {
			total.n++
		}
	}
	abs := func(v int64) int64 {
		if v < 0 {
			return -v
		}
		return v
	}
	for _, eu := range customers {
		used, n := usageOf(t, tn, eu)
		want := per[customerRecord(t, tn, eu).ID]
		if want == nil {
			want = &sum{}
		}
		customerBytes += abs(used - want.bytes)
		customerScenes += abs(n - want.n)
	}
	used, n := accountOf(t, tn)
	return customerBytes, customerScenes, abs(used - total.bytes), abs(n - total.n)
}

// readProc reads /proc/PID/NAME.
func readProc(pid int, name string) ([]byte, error) {
	return os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
}

// chaosDo sends one request of a fault case. Under faults a dead upstream answers 502, which
// the case's own figures count and judge; the OpenAPI recorder (testenv.Observe) would report it
// against whichever test reports next, so the full suite sends through restclient directly. The
// short form injects no fault and keeps every answer checked against the document.
func chaosDo(base, method, path string, h map[string]string, body any) (*testenv.Response, error) {
	if chaosFull {
		return restclient.Do(base, method, path, h, body)
	}
	return testenv.Do(base, method, path, h, body)
}
