//go:build e2e

package e2e

// Issue 27, item 5: the stack runner restarts an engine that dies, so the product's recovery
// from a Postgres or versitygw crash can be measured. `make test` runs the short form (a few
// clients, each engine killed once); `make chaos` the full one.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/ratelimit"
	"github.com/splathost/splathost/internal/testenv"
)

// engineLoad is what the clients of TestChaosEngineKills share: every write they were told
// succeeded, to be found again afterwards, and every answer, by status.
type engineLoad struct {
	base string
	tn   tenant
	hc   *http.Client

	mu      sync.Mutex
	acked   map[string]string // scene id -> owner, commits answered 201
	deleted map[string]bool   // deletes answered 200
	// unsure are the scenes whose delete got no answer (a connection cut, a 504): either
	// outcome is right, so the audit holds them to neither.
	unsure   map[string]bool
	titles   map[string]string // scene id -> the title of its last PATCH, when that PATCH answered 200
	bad5xx   []string          // the product's 5xx answers other than 503 and 504 OUTCOME_UNKNOWN, for the notes
	unknown  int               // 504 OUTCOME_UNKNOWN answers (a COMMIT cut by the kill)
	noRetry  int               // 503s without a Retry-After header
	notEnvel int               // API 5xx answers without the error envelope
	// all counts the product's answers; store the signed PUTs the clients send to the object
	// store itself; down, while set, the product's answers during an outage.
	all, store statusCounts
	down       atomic.Pointer[statusCounts]
	ops        atomic.Int64
	// keyRetries counts keyed commits sent again with their key; keysStuck the keyed commits
	// that got no final answer within keyRetryFor.
	keyRetries, keysStuck atomic.Int64
}

// record tallies one answer of the product (r nil: a transport error). api says the answer is
// the JSON API's, which owes the error envelope on a 5xx; an asset read's need not.
func (l *engineLoad) record(method, path string, api bool, r *testenv.Response, err error) {
	l.ops.Add(1)
	status := 0
	if r != nil {
		status = r.Status
	}
	l.all.add(status, err)
	if d := l.down.Load(); d != nil {
		d.add(status, err)
	}
	if r == nil || r.Status < 500 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if api && (r.Body["status"] != "error" || r.Body["message"] == nil) {
		l.notEnvel++
	}
	// 503: the store was down and nothing changed; 504 OUTCOME_UNKNOWN: the COMMIT was in flight
	// when Postgres died, and the answer says so. Both are honest answers of an outage.
	if r.Status == http.StatusServiceUnavailable || r.Status == http.StatusGatewayTimeout && r.Body["code"] == "OUTCOME_UNKNOWN" {
		if r.Header.Get("Retry-After") == "" {
			l.noRetry++
		}
		if r.Status == http.StatusGatewayTimeout {
			l.unknown++
		}
		return
	}
	if len(l.bad5xx) < 20 {
		l.bad5xx = append(l.bad5xx, fmt.Sprintf("%s %s %d %s", method, strings.SplitN(path, "?", 2)[0], r.Status, r.Raw))
	}
}

// call sends one request through the gateway and records its answer; every answer, the 503s
// of an outage included, is also held to the OpenAPI document (testenv.Do). A failed request is
// followed by a short pause, as a client's backoff would.
func (l *engineLoad) call(method, path, eu string, body any) *testenv.Response {
	return l.send(method, path, l.tn.keys(eu), body)
}

// send is call with the request's headers.
func (l *engineLoad) send(method, path string, h map[string]string, body any) *testenv.Response {
	r, err := testenv.Do(l.base, method, path, h, body)
	l.record(method, path, true, r, err)
	if err != nil || r.Status >= 500 {
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return nil
	}
	return r
}

// upload asks for a signed URL and PUTs a small .splat to the object store: the fileUrl to
// commit, or "" when a step failed.
func (l *engineLoad) upload(eu string) string {
	data := splatBytes(4 + rand.IntN(28))
	up := l.call("POST", "/api/v1/uploads/splat-file", eu,
		map[string]any{"fileName": "e.splat", "contentType": "application/splat", "fileSize": len(data)})
	if up == nil || up.Status != 200 {
		return ""
	}
	req, _ := http.NewRequest("PUT", up.Body["uploadUrl"].(string), strings.NewReader(string(data)))
	for k, v := range signedPut("application/splat") {
		req.Header.Set(k, v)
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		l.store.add(0, err) // the object store itself: refused while it is down
		return ""
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	l.store.add(resp.StatusCode, nil)
	if resp.StatusCode != 200 {
		return ""
	}
	return up.Body["fileUrl"].(string)
}

// keyRetryFor is how long a keyed commit is retried with its key while it answers 5xx or
// IDEMPOTENCY_KEY_IN_USE: 30 s under `make chaos`, 10 s in the short form (a key whose holder
// died is free again within idempotency.Lease, 6 s).
var keyRetryFor = time.Duration(chaosScale("SPLATHOST_CHAOS_KEY_RETRY_SECONDS", 10, 30)) * time.Second

// commit uploads and commits a scene: its id when the commit answered 201. A keyed commit (an
// Idempotency-Key) is retried with the same key and body after a 5xx, a lost answer or
// IDEMPOTENCY_KEY_IN_USE, as the contract tells clients to, for keyRetryFor at most.
func (l *engineLoad) commit(eu string, keyed bool) string {
	url := l.upload(eu)
	if url == "" {
		return ""
	}
	h := l.tn.keys(eu)
	if keyed {
		h["Idempotency-Key"] = ids.New()
	}
	body := map[string]any{"title": "engines", "splatUrl": url}
	for deadline := time.Now().Add(keyRetryFor); ; {
		c := l.send("POST", "/api/v1/splats", h, body)
		if c != nil && c.Status == 201 {
			id := c.Body["splatId"].(string)
			l.mu.Lock()
			l.acked[id] = eu
			l.mu.Unlock()
			return id
		}
		if !keyed || (c != nil && c.Status < 500 && c.Body["code"] != "IDEMPOTENCY_KEY_IN_USE") {
			return ""
		}
		if time.Now().After(deadline) {
			l.keysStuck.Add(1)
			return ""
		}
		l.keyRetries.Add(1)
		time.Sleep(100 * time.Millisecond)
	}
}

// replays commits a scene with an Idempotency-Key and sends the same request again: true when
// the second answer is the first one replayed (201, the same splatId, Idempotent-Replayed).
func (l *engineLoad) replays(eu string) bool {
	url := l.upload(eu)
	if url == "" {
		return false
	}
	h := l.tn.keys(eu)
	h["Idempotency-Key"] = ids.New()
	body := map[string]any{"title": "replayed", "splatUrl": url}
	first := l.send("POST", "/api/v1/splats", h, body)
	if first == nil || first.Status != 201 {
		return false
	}
	id := first.Body["splatId"].(string)
	l.mu.Lock()
	l.acked[id] = eu
	l.mu.Unlock()
	again := l.send("POST", "/api/v1/splats", h, body)
	return again != nil && again.Status == 201 && again.Body["splatId"] == id && again.Header.Get("Idempotent-Replayed") == "true"
}

// readAsset reads a scene and then its splat file through the product's asset route (backed by
// the object store): true when both answered 200.
func (l *engineLoad) readAsset(eu, id string) bool {
	g := l.call("GET", splatPath(id), eu, nil)
	if g == nil || g.Status != 200 {
		return false
	}
	u, _ := splatOf(g)["splatUrl"].(string)
	resp, err := l.hc.Get(u)
	if err != nil {
		l.record("GET", "asset", false, nil, err)
		return false
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	l.record("GET", "asset", false, &testenv.Response{Status: resp.StatusCode, Header: resp.Header, Raw: body}, nil)
	return resp.StatusCode == 200
}

// client runs one customer's mix until stop: commits, title patches, reads and deletes of its
// own scenes, sequentially, so the last acknowledged PATCH of a scene is its title.
func (l *engineLoad) client(eu string, stop <-chan struct{}) {
	var mine []string
	for {
		if r := l.call("PUT", "/api/v1/external-user", eu, map[string]any{}); r != nil && r.Status == 200 {
			break
		}
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		switch op := n % 6; {
		case op == 0 || len(mine) == 0:
			if id := l.commit(eu, n%12 == 0); id != "" {
				mine = append(mine, id)
			}
		case op == 1 || op == 4:
			id := mine[rand.IntN(len(mine))]
			title := fmt.Sprintf("t%d", n)
			r := l.call("PATCH", splatPath(id), eu, map[string]any{"title": title})
			l.mu.Lock()
			if r != nil && r.Status == 200 {
				l.titles[id] = title
			} else {
				delete(l.titles, id) // outcome unknown: nothing to hold it to
			}
			l.mu.Unlock()
		case op == 2:
			l.readAsset(eu, mine[rand.IntN(len(mine))])
		case op == 3:
			l.call("GET", "/api/v1/external-user/usage", eu, nil)
		case op == 5 && len(mine) > 2:
			i := rand.IntN(len(mine))
			r := l.call("DELETE", splatPath(mine[i]), eu, nil)
			switch {
			case r != nil && r.Status == 200:
				l.mu.Lock()
				l.deleted[mine[i]] = true
				l.mu.Unlock()
				mine = append(mine[:i], mine[i+1:]...)
			case r == nil || r.Status == http.StatusGatewayTimeout:
				// The answer was lost (the gateway died mid-request): the scene may be gone, so
				// the client stops using it, as one that cannot tell would.
				l.mu.Lock()
				if l.unsure == nil {
					l.unsure = map[string]bool{}
				}
				l.unsure[mine[i]] = true
				l.mu.Unlock()
				mine = append(mine[:i], mine[i+1:]...)
			}
		}
	}
}

// recovered returns once a full commit and an asset read succeed again through the gateway,
// with the time since since.
func (l *engineLoad) recovered(t *testing.T, since time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if id := l.commit("probe", false); id != "" && l.readAsset("probe", id) {
			return time.Since(since)
		}
		require.True(t, time.Now().Before(deadline), "the product did not recover within 2 minutes")
		time.Sleep(50 * time.Millisecond)
	}
}

// TestChaosEngineKills kills Postgres and then versitygw with SIGKILL under a mixed load
// (commits, title patches, scene and asset reads, usage, deletes) through the split binaries;
// the stack runner restarts each. Then: every commit answered 201 is there, every delete
// answered 200 stays deleted, every scene's last acknowledged title holds, each customer's
// storage used is the sum of its scenes (no double charge), and no answer was a 500: a store
// that is down answers 503 with Retry-After and the error envelope.
func TestChaosEngineKills(t *testing.T) {
	rep := newChaosReport(t, "Postgres and versitygw kill -9 under load")
	clients := chaosScale("SPLATHOST_CHAOS_ENGINE_CLIENTS", 4, 16)
	between := time.Duration(chaosScale("SPLATHOST_CHAOS_ENGINE_SECONDS", 1, 8)) * time.Second
	sp := chaosSplit(t, func(o *testenv.SplitOptions) { o.Config.RateLimit.APIPro = ratelimit.Limit{} })
	l := &engineLoad{base: sp.URL, tn: newTenant(t), hc: &http.Client{Timeout: 30 * time.Second},
		acked: map[string]string{}, deleted: map[string]bool{}, titles: map[string]string{}}
	r := do(t, "PUT", "/api/v1/external-user", l.tn.keys("probe"), map[string]any{})
	require.Equal(t, 200, r.Status, string(r.Raw))
	customers := []string{"probe"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		eu := fmt.Sprintf("e%d", i)
		customers = append(customers, eu)
		wg.Go(func() { l.client(eu, stop) })
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopLoad)

	// Every client has a scene before the first kill, so patches, reads and deletes run too.
	time.Sleep(between)
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.acked) >= clients
	}, time.Minute, 50*time.Millisecond, "the clients commit before the faults")
	notReplayed := 0
	for _, engine := range []string{testenv.EnginePostgres, testenv.EngineVersityGW} {
		before := l.ops.Load()
		down := &statusCounts{}
		l.down.Store(down)
		t0 := time.Now()
		restart, err := env.KillEngine(engine)
		require.NoError(t, err, engine)
		recovered := l.recovered(t, t0)
		l.down.Store(nil)
		if !l.replays("probe") {
			notReplayed++
		}
		rep.info(engine+": runner restart (ms)", float64(restart.Milliseconds()))
		rep.info(engine+": until a commit and an asset read succeed (ms)", float64(recovered.Milliseconds()))
		rep.info(engine+": failed answers until then", float64(down.count(func(s int) bool { return s >= 400 })+down.errs))
		rep.note("%s killed after %d requests; answers until the product recovered: %s", engine, before, statuses(down))
		time.Sleep(between)
	}
	stopLoad()

	// The shared in-process product recovered too (the other tests of this binary use it).
	r = do(t, "GET", "/api/v1/external-user/usage", l.tn.keys("e0"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))

	live := map[string]bool{}
	for _, s := range liveScenes(t, l.tn.IntegrationID) {
		live[s.id] = true
	}
	var lost, resurrected, lostPatches int
	for id := range l.acked {
		if l.lost(id, live) {
			lost++
		}
	}
	for id := range l.deleted {
		if live[id] {
			resurrected++
		}
	}
	titles := map[string]string{}
	rows, err := env.Process.DB.Pool.Query(t.Context(), `SELECT id, title FROM scenes WHERE integration_id = $1`, l.tn.IntegrationID)
	require.NoError(t, err)
	for rows.Next() {
		var id, title string
		require.NoError(t, rows.Scan(&id, &title))
		titles[id] = title
	}
	require.NoError(t, rows.Err())
	rows.Close()
	for id, want := range l.titles {
		if !l.deleted[id] && titles[id] != want {
			lostPatches++
		}
	}
	cb, cs, ab, as := usageAudit(t, l.tn, customers...)

	rep.info("clients", float64(clients))
	rep.info("requests", float64(l.ops.Load()))
	rep.info("commits acknowledged", float64(len(l.acked)))
	rep.info("deletes acknowledged", float64(len(l.deleted)))
	rep.info("deletes whose answer was lost", float64(len(l.unsure)))
	rep.info("503 answers", float64(l.all.count(func(s int) bool { return s == 503 })))
	rep.info("transport errors", float64(l.all.errs))
	rep.zero("500 answers (a down store is a 503)", float64(l.all.count(func(s int) bool { return s >= 500 && s != 503 && s != 504 })))
	rep.zero("504 answers other than OUTCOME_UNKNOWN", float64(l.all.count(func(s int) bool { return s == 504 })-l.unknown))
	rep.info("504 OUTCOME_UNKNOWN answers (a COMMIT cut by the kill)", float64(l.unknown))
	rep.zero("503 without Retry-After", float64(l.noRetry))
	rep.zero("5xx without the error envelope", float64(l.notEnvel))
	rep.zero("acknowledged commits lost", float64(lost))
	rep.zero("acknowledged deletes undone", float64(resurrected))
	rep.zero("acknowledged patches lost", float64(lostPatches))
	rep.zero("usage − Σ scenes (bytes + counts)", float64(cb+cs+ab+as))
	rep.zero("keyed commits not replayed after a recovery", float64(notReplayed))
	rep.info("keyed commits sent again with their key", float64(l.keyRetries.Load()))
	rep.zero(fmt.Sprintf("keyed commits with no final answer within %s", keyRetryFor), float64(l.keysStuck.Load()))
	rep.note("all answers: %s; the object store's own answers to signed PUTs: %s", statuses(&l.all), statuses(&l.store))
	if len(l.bad5xx) > 0 {
		rep.note("5xx other than 503: %s", strings.Join(l.bad5xx, " | "))
	}
	rep.check()
}

// lost reports whether an acknowledged commit is missing from live without a delete that may
// explain it (one answered 200, or one whose answer was lost). Call it once the load stopped.
func (l *engineLoad) lost(id string, live map[string]bool) bool {
	return !live[id] && !l.deleted[id] && !l.unsure[id]
}

// statuses lists the counts by status, in order, and the transport errors.
func statuses(s *statusCounts) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []int
	for k := range s.byStatus {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%d×%d, ", k, s.byStatus[k])
	}
	fmt.Fprintf(&b, "%d transport errors", s.errs)
	if s.errs > 0 {
		fmt.Fprintf(&b, " (last: %s)", s.lastErr)
	}
	return b.String()
}
