//go:build e2e && chaos

package e2e

// The fault cases of issue 12's points 11-14 (each failed on the code before the fixes): kills,
// lock loss and a ClickHouse crash take minutes, so they run under `make chaos` only (build tag
// chaos); `make test` keeps the single-fault tests of each point (restart_test.go,
// faults_test.go, clone_crash_test.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/ratelimit"
	"github.com/splathost/splathost/internal/testenv"
)

// TestChaosCloneAcrossWorkerKill clones a LOD scene through the split binaries and kills the
// worker with SIGKILL while it copies: the job's progress (GET clone job, polled every 100 ms)
// never goes backwards, the job completes, and no object is left that no scene owns.
func TestChaosCloneAcrossWorkerKill(t *testing.T) {
	rep := newChaosReport(t, "clone across a worker kill")
	n := chaosScale("SPLATHOST_CHAOS_CLONE_OBJECTS", 1000, 12000)
	// One copy at a time keeps the job running long enough to be killed in the middle, after
	// its first progress report (heartbeats reach the server every few seconds).
	sp := chaosSplit(t, func(o *testenv.SplitOptions) { o.Config.CloneConcurrency = 1 })
	a := newTenant(t)
	src := lodScene(t, a, "crashy", n)
	srcID := src["id"].(string)
	h := a.keys("crashy")
	h["Prefer"] = "respond-async"
	r, err := chaosDo(sp.URL, "POST", clonePath(srcID), h, nil)
	require.NoError(t, err)
	require.Equal(t, 202, r.Status, string(r.Raw))
	jobID := r.Body["jobId"].(string)

	var (
		mu          sync.Mutex
		progress    []float64
		regressions int
		final       *testenv.Response
		pollErrs    int
	)
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		best := -1.0
		for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			r, err := chaosDo(sp.URL, "GET", clonePath(srcID)+"/"+jobID, a.keys("crashy"), nil)
			mu.Lock()
			if err != nil || r.Status != 200 {
				pollErrs++
				mu.Unlock()
				continue
			}
			if r.Body["status"] != "running" {
				final = r
				mu.Unlock()
				return
			}
			c := r.Body["copiedObjects"].(float64)
			progress = append(progress, c)
			if c < best {
				regressions++
			}
			best = max(best, c)
			mu.Unlock()
		}
	}()
	copied := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		if len(progress) == 0 {
			return 0
		}
		return progress[len(progress)-1]
	}
	require.Eventually(t, func() bool {
		select {
		case <-pollDone:
			return true // finished before any progress showed: reported below as no kill
		default:
		}
		return copied() > 0
	}, 2*time.Minute, 20*time.Millisecond, "the copy reports progress")
	atKill := copied()
	select {
	case <-pollDone:
		t.Fatalf("the clone of %d objects finished before the kill: raise SPLATHOST_CHAOS_CLONE_OBJECTS", n)
	default:
	}
	require.NoError(t, sp.Kill("worker"))
	time.Sleep(2 * time.Second) // polls go on while no worker runs
	require.NoError(t, sp.Start("worker"))
	<-pollDone

	mu.Lock()
	defer mu.Unlock()
	status := "timed out"
	if final != nil {
		status, _ = final.Body["status"].(string)
	}
	runSweeps(t, a.IntegrationID)
	orphans, missing, objects := objectAudit(t, store(t), a.IntegrationID)
	cb, cs, ab, as := usageAudit(t, a, "crashy")
	rep.info("objects in the folder", float64(n))
	rep.info("copied at the kill", atKill)
	rep.info("progress polls", float64(len(progress)))
	rep.zero("progress regressions", float64(regressions))
	rep.promise("job completes", boolFigure(status == "success"), "= 1 (success)", status == "success")
	rep.zero("orphan objects", float64(len(orphans)))
	rep.zero("scenes missing their file", float64(len(missing)))
	rep.equal("objects in the bucket", float64(objects), float64(2*n))
	rep.zero("usage − Σ scenes (bytes + counts)", float64(cb+cs+ab+as))
	rep.note("%d-object LOD folder, worker SIGKILLed at %.0f copied; job %s; %d failed polls; progress %v",
		n, atKill, status, pollErrs, summarize(progress))
	rep.check()
}

// boolFigure is 1 for true.
func boolFigure(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// summarize keeps a progress series short for the notes: its values where they change.
func summarize(p []float64) []float64 {
	var out []float64
	for i, v := range p {
		if i == 0 || v != p[i-1] {
			out = append(out, v)
		}
	}
	if len(out) > 40 {
		out = append(out[:20], out[len(out)-20:]...)
	}
	return out
}

// TestChaosViewsAcrossFaults sends view beacons to a dedicated stack (its own Postgres,
// ClickHouse and split binaries, so the crashes touch no other test) while ClickHouse is killed
// and restarted, the session service is SIGKILLed and the streamer's advisory-lock connection is
// terminated in Postgres. Each beacon is retried until it is accepted. Then: every accepted view
// is counted (0 lost), and viewCount, the ClickHouse rows, their distinct event ids and the
// trending impressions are one number (0 counted twice); only retries of an answer that never
// came may add views.
func TestChaosViewsAcrossFaults(t *testing.T) {
	rep := newChaosReport(t, "view beacons across faults")
	n := chaosScale("SPLATHOST_CHAOS_VIEWS", 500, 5000)
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	stack, err := testenv.StartStack(ctx, testenv.StackOptions{Dir: dir, Services: "none"})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := stack.Stop(); err != nil {
			t.Errorf("dedicated stack: %v", err)
		}
	})
	cfg := stack.State.Config()
	// The beacons of distinct visitors through one session stand in for thousands of browsers:
	// its bounds on new visitors and views (and the session's request rate) would refuse them.
	cfg.RateLimit.Session, cfg.RateLimit.Visitors, cfg.RateLimit.Views = ratelimit.Limit{}, ratelimit.Limit{}, ratelimit.Limit{}
	sp, err := testenv.StartSplit(testenv.SplitOptions{Config: cfg, LogDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() {
		sp.Stop()
		if t.Failed() {
			for _, n := range testenv.SplitNames {
				t.Logf("%s log:\n%s", n, testenv.LogTail(filepath.Join(dir, n+".log"), 15))
			}
		}
	})
	// A second worker, as a second replica: its streamer competes for the advisory lock, so a
	// streamer that lost its lock connection without noticing would drain beside the new holder.
	require.NoError(t, sp.AddWorker("worker-2"))
	pool, err := pgxpool.New(ctx, cfg.PostgresURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	// A tenant with one public scene, through the split gateway.
	call := func(method, path string, h map[string]string, body any, want int) *testenv.Response {
		t.Helper()
		r, err := chaosDo(sp.URL, method, path, h, body)
		require.NoError(t, err)
		require.Equal(t, want, r.Status, "%s %s: %s", method, path, r.Raw)
		return r
	}
	adm := map[string]string{"Authorization": "Bearer " + cfg.AdminToken}
	acct := call("POST", "/admin/v1/accounts", adm, map[string]any{"name": "chaos views", "plan": "pro", "storageBundleBytes": 1 << 30}, 201)
	in := call("POST", "/admin/v1/integrations", adm, map[string]any{"accountId": acct.Body["account"].(map[string]any)["id"],
		"productSlug": "chaos.example", "capabilities": []string{"viewer", "editor"}}, 201).Body["integration"].(map[string]any)
	tn := tenant{IntegrationID: in["id"].(string), PublicKey: in["publicKey"].(string), SecretKey: in["secretKey"].(string)}
	call("PUT", "/api/v1/external-user", tn.keys("ada"), map[string]any{}, 200)
	data := splatBytes(4)
	up := call("POST", "/api/v1/uploads/splat-file", tn.keys("ada"), map[string]any{"fileName": "v.splat", "contentType": "application/splat", "fileSize": len(data)}, 200)
	require.Equal(t, 200, putUpload(t, up.Body["uploadUrl"].(string), data, signedPut("application/splat")))
	id := call("POST", "/api/v1/splats", tn.keys("ada"), map[string]any{"title": "viewed", "splatUrl": up.Body["fileUrl"]}, 201).Body["splatId"].(string)
	call("PATCH", splatPath(id), tn.keys("ada"), map[string]any{"visibility": "public"}, 200)
	tok := call("POST", "/api/editor/embed-sessions", tn.secretBearer(""), map[string]any{"publicKey": tn.PublicKey, "type": "viewer", "splatId": id}, 201).Body["sessionToken"].(string)

	// The faults, each once the beacons reach its share of n. The lock connection dies first,
	// while every batch succeeds: a streamer whose batches fail (ClickHouse down) pings its lock
	// connection and notices, one whose batches succeed must check too.
	var sent, accepted, retries, ambiguous, gaveUp atomic.Int64
	var terminated int
	var chDown, lockTaken atomic.Bool
	var ingestedAtTakeover map[string]float64
	faults := []struct {
		at   float64
		name string
		do   func() error
	}{
		{0.15, "lock connection terminated", func() error {
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				// The dedicated stack's only advisory-lock holder is the streamer.
				rows, err := pool.Query(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
					WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()`)
				if err != nil {
					return err
				}
				for rows.Next() {
					terminated++
				}
				rows.Close()
				if terminated > 0 {
					// Wait for the other streamer to take the lock over: from then on two
					// streamers run unless the first noticed it lost the lock.
					for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
						var holders int
						if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted`).Scan(&holders); err == nil && holders > 0 {
							lockTaken.Store(true)
							ingestedAtTakeover = ingestedByWorker(sp)
							break
						}
					}
					return nil
				}
			}
			return errors.New("no advisory-lock holder found to terminate")
		}},
		{0.40, "ClickHouse SIGKILL", func() error {
			err := stack.CrashClickHouse(30 * time.Second)
			chDown.Store(err == nil)
			time.Sleep(time.Second) // trending is asked for while it is down, whatever the pace
			return err
		}},
		{0.60, "ClickHouse restart", func() error {
			chDown.Store(false)
			return stack.StartClickHouse(filepath.Join(dir, "stack.json"), 2*time.Minute)
		}},
		{0.80, "session SIGKILL + restart", func() error {
			if err := sp.Kill("session"); err != nil {
				return err
			}
			time.Sleep(300 * time.Millisecond)
			return sp.Start("session")
		}},
	}
	// Trending is asked for while ClickHouse is down: it degrades, never a 5xx (point 14).
	var downTrending statusCounts
	downSources := map[string]int{}
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		for sent.Load() < int64(n) {
			time.Sleep(50 * time.Millisecond)
			if !chDown.Load() {
				continue
			}
			r, err := chaosDo(sp.URL, "GET", "/api/v1/splats/trending", tn.keys(""), nil)
			if err != nil {
				downTrending.add(0, err)
				continue
			}
			downTrending.add(r.Status, nil)
			if s, ok := r.Body["trending"].(map[string]any); ok && r.Status == 200 {
				downTrending.mu.Lock()
				downSources[fmt.Sprint(s["source"])]++
				downTrending.mu.Unlock()
			}
		}
	}()
	var injected []string

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 20 * time.Second}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				sent.Add(1)
				if beaconUntilAccepted(client, sp.URL, tok, id, fmt.Sprintf("visitor-%05d", i), &retries, &ambiguous) {
					accepted.Add(1)
				} else {
					gaveUp.Add(1)
				}
			}
		}()
	}
	// The feeder injects each fault when the beacons handed out reach its share, so the faults
	// land at the same points of the stream however fast the machine is; beacons in flight go on.
	next := 0
	for i := 0; i < n; i++ {
		for next < len(faults) && i >= int(faults[next].at*float64(n)) {
			f := faults[next]
			next++
			if err := f.do(); err != nil {
				t.Errorf("fault %s: %v", f.name, err)
				continue
			}
			injected = append(injected, f.name)
		}
		work <- i
	}
	close(work)
	wg.Wait()
	<-probeDone

	// Wait for the streamer to drain the outbox, then a little longer for a second streamer's
	// late batch to show.
	var pending int64
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		pending, err = analytics.Pending(ctx, pool)
		if err == nil && pending == 0 {
			break
		}
	}
	time.Sleep(5 * time.Second)
	ch, err := analytics.Open(ctx, cfg.ClickHouseAddr, cfg.ClickHouseDB)
	require.NoError(t, err)
	defer ch.Close()
	var rows, events, visitors uint64
	require.NoError(t, ch.QueryRow(ctx, "SELECT count(), uniqExact(event_id), uniqExact(visitor_id) FROM "+
		cfg.ClickHouseDB+"."+analytics.EventsTable+" WHERE scene_id = ?", id).Scan(&rows, &events, &visitors))
	vc := int64(call("GET", splatPath(id), tn.keys(""), nil, 200).Body["splat"].(map[string]any)["viewCount"].(float64))
	tr, err := chaosDo(sp.URL, "GET", "/api/v1/splats/trending", tn.keys(""), nil)
	require.NoError(t, err)
	var impressions float64 = -1
	var source string
	if tr.Status == 200 {
		for _, it := range tr.Body["splats"].([]any) {
			m := it.(map[string]any)
			if m["id"] == id {
				info := m["trending"].(map[string]any)
				impressions, source = info["impressions"].(float64), fmt.Sprint(info["source"])
			}
		}
	}

	acc := float64(accepted.Load())
	rep.info("beacons", float64(n))
	rep.info("retried attempts", float64(retries.Load()))
	rep.info("answers lost (retried, may count)", float64(ambiguous.Load()))
	rep.info("advisory-lock backends terminated", float64(terminated))
	rep.info("lock taken over by the other streamer", boolFigure(lockTaken.Load()))
	// Deterministic where duplicates are not: after the takeover only the new holder may drain.
	draining := 0
	for name, v := range ingestedByWorker(sp) {
		if at, ok := ingestedAtTakeover[name]; ok && v > at {
			draining++
		}
	}
	rep.atMost("streamers that drained after the takeover", float64(draining), 1)
	rep.zero("beacons never accepted", float64(gaveUp.Load()))
	rep.zero("outbox rows left", float64(pending))
	rep.zero("lost: accepted − viewCount (if > 0)", max(0, acc-float64(vc)))
	rep.zero("lost: visitors missing in ClickHouse", float64(n)-float64(visitors))
	rep.equal("ClickHouse rows", float64(rows), float64(vc))
	rep.equal("ClickHouse distinct event ids", float64(events), float64(vc))
	rep.equal("trending impressions", impressions, float64(vc))
	rep.atMost("viewCount − accepted (retries of lost answers)", float64(vc)-acc, float64(ambiguous.Load()))
	rep.info("trending calls while ClickHouse was down", float64(downTrending.count(func(int) bool { return true })+downTrending.errs))
	rep.zero("trending 5xx while ClickHouse was down", float64(downTrending.count(func(s int) bool { return s >= 500 })+downTrending.errs))
	rep.note("trending while ClickHouse was down: %s, summary sources %v", downTrending.String(), downSources)
	rep.note("%d beacons by 16 clients; faults: %v; viewCount %d, trending source %s", n, injected, vc, source)
	rep.check()
}

// ingestedByWorker reads splathost_views_ingested_total of each worker process of sp (a
// missing or unreadable one is left out).
func ingestedByWorker(sp *testenv.Split) map[string]float64 {
	out := map[string]float64{}
	for _, name := range []string{"worker", "worker-2"} {
		req, err := http.NewRequest(http.MethodGet, sp.ServiceURL(name)+"/metrics", nil)
		if err != nil {
			continue
		}
		// A process's metrics answer the admin token only (httpx.MetricsGuard).
		req.Header.Set("Authorization", "Bearer "+sp.Config.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "splathost_views_ingested_total "); ok {
				var f float64
				if _, err := fmt.Sscanf(v, "%g", &f); err == nil {
					out[name] = f
				}
			}
		}
	}
	return out
}

// beaconUntilAccepted sends one visitor's view beacon until it is accepted (202), up to 120
// attempts 250 ms apart, as the embed's beacon retries: false when it never was. Every attempt
// after the first adds to retries; ambiguous counts the attempts whose answer was lost or a 5xx
// after the request reached the service (the view may have been stored: a retry may add it again).
func beaconUntilAccepted(c *http.Client, base, token, id, visitor string, retries, ambiguous *atomic.Int64) bool {
	for attempt := 0; attempt < 120; attempt++ {
		if attempt > 0 {
			retries.Add(1)
			time.Sleep(250 * time.Millisecond)
		}
		status, sentBody, err := postBeacon(c, base, token, id, visitor)
		switch {
		case err == nil && status == 202:
			return true
		case sentBody && (err != nil || status >= 500):
			ambiguous.Add(1)
		}
	}
	return false
}

// postBeacon sends one view beacon. sentBody says whether the request may have reached the
// service (false for a refused connection, which is safe to retry).
func postBeacon(c *http.Client, base, token, id, visitor string) (status int, sentBody bool, err error) {
	body := fmt.Sprintf(`{"splatId":%q,"visitorId":%q}`, id, visitor)
	req, err := http.NewRequest("POST", base+"/api/embed/views", strings.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, !errors.Is(err, syscall.ECONNREFUSED), err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, true, nil
}

// TestChaosRollingRestartUnderLoad restarts every split binary in turn (SIGTERM, then start
// again on the same port, as a rolling update does) while 32 keep-alive clients send idempotent
// GETs through the gateway: every answer is a 2xx. Connections the gateway refuses while it is
// itself down are retried (nothing was sent) and counted apart.
func TestChaosRollingRestartUnderLoad(t *testing.T) {
	rep := newChaosReport(t, "rolling restart under load")
	clients := chaosScale("SPLATHOST_CHAOS_CLIENTS", 32, 32)
	// 32 clients at full speed on one integration stand in for many integrations: its plan's
	// rate limit would answer 429, and every answer must be a 2xx here.
	sp := chaosSplit(t, func(o *testenv.SplitOptions) { o.Config.RateLimit.APIPro = ratelimit.Limit{} })
	a := newTenant(t)
	id := newScene(t, a, "ada", 4)["id"].(string)
	h := a.keys("ada")
	paths := []string{splatPath(id), "/api/v1/external-user", "/api/v1/external-user/usage", "/api/v1/splats?limit=5"}
	tr := &http.Transport{MaxIdleConnsPerHost: clients * 2}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	var total, refused atomic.Int64
	var bad statusCounts
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; ctx.Err() == nil; j++ {
				req, _ := http.NewRequest("GET", sp.URL+paths[j%len(paths)], nil)
				for k, v := range h {
					req.Header.Set(k, v)
				}
				resp, err := c.Do(req)
				if err != nil {
					if errors.Is(err, syscall.ECONNREFUSED) {
						refused.Add(1)
						time.Sleep(20 * time.Millisecond)
						continue
					}
					total.Add(1)
					bad.add(0, err)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				total.Add(1)
				if resp.StatusCode >= 300 {
					bad.add(resp.StatusCode, nil)
					if resp.StatusCode >= 500 {
						t.Logf("%s %s: %d %s", time.Now().Format("15:04:05.000"), req.URL.Path, resp.StatusCode, body)
					}
				}
			}
		}()
	}
	var restarted []string
	for _, name := range []string{"user", "scene", "session", "worker", "gateway"} {
		time.Sleep(time.Second)
		require.NoError(t, sp.Term(name, 20*time.Second), name)
		require.NoError(t, sp.Start(name), name)
		restarted = append(restarted, name)
	}
	time.Sleep(2 * time.Second)
	stop()
	wg.Wait()

	rep.info("keep-alive clients", float64(clients))
	rep.info("requests answered", float64(total.Load()))
	rep.info("services restarted", float64(len(restarted)))
	rep.info("refused while the gateway was down (retried)", float64(refused.Load()))
	rep.zero("non-2xx answers", float64(bad.count(func(int) bool { return true })))
	rep.zero("broken requests (reset, EOF)", float64(bad.errs))
	rep.note("restarted %v in turn; non-2xx: %s", restarted, bad.String())
	rep.check()
}
