//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/ratelimit"
	"github.com/splathost/splathost/internal/testenv"
)

// The rate limits (docs/security.md, "Rate limits") with the defaults every stack runs with:
// these tests set nothing. Limits are kept by each gateway process, so the tests talk to the
// in-process gateway itself (env.ProcessURL: with SPLATHOST_E2E_REPLICAS the balancer would
// spread them over several gateways, each with its own buckets). The address-scoped tests send
// from loopback addresses of their own (127.0.0.0/8 is all this machine's), so the rest of the
// suite, which sends from 127.0.0.1, never shares their buckets.

// withRateLimits changes the in-process gateway's limits for one test and restores them at its
// end: for tests whose load stands in for many callers (thousands of strangers' garbage keys),
// which the defaults would refuse. Split stacks a test starts get theirs from their
// configuration (config.Config.RateLimit) or StackOptions.Env instead.
func withRateLimits(t *testing.T, change func(*config.RateLimits)) {
	t.Helper()
	rl := env.Process.RateLimits
	before := rl.Config()
	cfg := before
	change(&cfg)
	rl.Set(cfg)
	t.Cleanup(func() { rl.Set(before) })
}

// viewerSessions mints one viewer session pinned to scene id for each of n visitors: real
// traffic's shape (every browser has its own session), which keeps a test that stands in for
// many browsers within each session's bounds on new visitors and views.
func viewerSessions(t *testing.T, tn tenant, id string, n int) []string {
	t.Helper()
	toks := make([]string, n)
	for i := range toks {
		toks[i] = mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": id})
	}
	return toks
}

// clientFrom is an HTTP client whose connections leave from the loopback address ip.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
}

// getFrom sends a GET with c and holds the answer to the OpenAPI document like do does.
func getFrom(c *http.Client, base, path string, headers map[string]string) (*testenv.Response, error) {
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	r := &testenv.Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		r.Body = map[string]any{}
		_ = json.Unmarshal(raw, &r.Body)
	}
	// The JSON answers (errors, refusals) are held to the document; an asset's bytes are not.
	if r.Body != nil && testenv.Observe != nil {
		testenv.Observe(base, "GET", path, r)
	}
	return r, nil
}

// requireLimited checks a refusal: 429, the envelope with RATE_LIMITED and the policy, a
// Retry-After of whole seconds equal to the envelope's retryAfter, and the draft's fields.
func requireLimited(t *testing.T, r *testenv.Response, policy string) int {
	t.Helper()
	requireEnvelope(t, r, 429)
	require.Equal(t, "RATE_LIMITED", r.Body["code"], string(r.Raw))
	require.Equal(t, policy, r.Body["policy"], string(r.Raw))
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After: %q", r.Header.Get("Retry-After"))
	require.Positive(t, secs)
	require.Equal(t, float64(secs), r.Body["retryAfter"])
	require.Regexp(t, `(^|,)"`+policy+`";q=\d+;w=\d+`, r.Header.Get("RateLimit-Policy"))
	require.Equal(t, fmt.Sprintf(`"%s";r=0;t=%d`, policy, secs), r.Header.Get("RateLimit"))
	return secs
}

// floodCounts tallies a flood's answers: the expected status, 429s (the first kept), and
// anything else (transport errors included).
type floodCounts struct {
	passed, refused, other atomic.Int64
	first                  atomic.Pointer[testenv.Response]
}

// flood sends n GETs of path with c on workers connections, counting each answer into counts;
// wg waits for it (several floods may run at once).
func flood(wg *sync.WaitGroup, c *http.Client, path string, n, workers, ok int, counts *floodCounts) {
	jobs := make(chan struct{})
	for range workers {
		wg.Go(func() {
			for range jobs {
				r, err := getFrom(c, env.ProcessURL, path, nil)
				switch {
				case err != nil:
					counts.other.Add(1)
				case r.Status == ok:
					counts.passed.Add(1)
				case r.Status == 429:
					counts.refused.Add(1)
					counts.first.CompareAndSwap(nil, r)
				default:
					counts.other.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for range n {
			jobs <- struct{}{}
		}
		close(jobs)
	})
}

// likesOfNewVisitors sends n likes of scene id with the session tok, each under a visitorId never
// seen before (what one session inventing visitors sends), and returns the answers.
func likesOfNewVisitors(t *testing.T, tok, id string, n int) []*testenv.Response {
	t.Helper()
	out := make([]*testenv.Response, n)
	for i := range out {
		out[i] = doAt(t, env.ProcessURL, "POST", "/api/embed/splats/"+id+"/like", sessionHeaders(tok),
			map[string]any{"visitorId": fmt.Sprintf("invented-%d-%s", i, ids.New())})
	}
	return out
}

// TestRateLimitPerIntegration: a free plan's integration (200 requests per 10 s) gets its burst,
// then 429 with Retry-After and the RateLimit fields; after Retry-After it is served again;
// another integration was never slowed meanwhile; and an upgrade of the account's plan raises
// the limit.
func TestRateLimitPerIntegration(t *testing.T) {
	free := newIntegration(t, newAccount(t, "free", 1<<20), nil)
	other := newTenant(t)
	const burst = 200
	start := time.Now()
	var first *testenv.Response
	served := 0
	for i := 0; i < 3*burst && first == nil; i++ {
		r := doAt(t, env.ProcessURL, "GET", "/api/v1/splats?limit=1", free.keys(""), nil)
		switch r.Status {
		case 200:
			served++
			require.Equal(t, `"integration";q=200;w=10`, r.Header.Get("RateLimit-Policy"))
			require.Regexp(t, `^"integration";r=\d+;t=\d+$`, r.Header.Get("RateLimit"))
		case 429:
			first = r
		default:
			t.Fatalf("request %d: %d %s", i, r.Status, r.Raw)
		}
	}
	require.NotNil(t, first, "a free integration is refused past its burst")
	// One request refills every 50 ms: the burst plus what refilled while it was sent.
	require.GreaterOrEqual(t, served, burst)
	require.LessOrEqual(t, served, burst+int(time.Since(start)/(50*time.Millisecond))+1)
	secs := requireLimited(t, first, "integration")
	require.Equal(t, 200, doAt(t, env.ProcessURL, "GET", "/api/v1/splats?limit=1", other.keys(""), nil).Status,
		"another integration has its own bucket")

	time.Sleep(time.Duration(secs) * time.Second)
	r := doAt(t, env.ProcessURL, "GET", "/api/v1/splats?limit=1", free.keys(""), nil)
	require.Equal(t, 200, r.Status, "served again after Retry-After: %s", r.Raw)

	// The limit follows the account's plan: an upgrade applies to the next requests.
	r = doAt(t, env.ProcessURL, "PATCH", "/admin/v1/accounts/"+free.AccountID, admin(), map[string]any{"plan": "enterprise"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Eventually(t, func() bool {
		r := doAt(t, env.ProcessURL, "GET", "/api/v1/splats?limit=1", free.keys(""), nil)
		return r.Status == 200 && r.Header.Get("RateLimit-Policy") == `"integration";q=5000;w=10`
	}, 5*time.Second, 50*time.Millisecond, "the enterprise plan's limit")
}

// TestRateLimitPerSession: one embed session gets the session burst (200 requests per 10 s) on
// /api/embed, then 429; another session of the same integration is served.
func TestRateLimitPerSession(t *testing.T) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	tok, fresh := mintToken(t, tn, "", map[string]any{"type": "viewer"}), mintToken(t, tn, "", map[string]any{"type": "viewer"})
	var refused *testenv.Response
	served := 0
	for i := 0; i < 600 && refused == nil; i++ {
		r := doAt(t, env.ProcessURL, "GET", "/api/embed/splats/"+id, sessionHeaders(tok), nil)
		switch r.Status {
		case 200:
			served++
		case 429:
			refused = r
		default:
			t.Fatalf("request %d: %d %s", i, r.Status, r.Raw)
		}
	}
	require.NotNil(t, refused, "a session is refused past its burst")
	require.GreaterOrEqual(t, served, 200)
	requireLimited(t, refused, "session")
	r := doAt(t, env.ProcessURL, "GET", "/api/embed/splats/"+id, sessionHeaders(fresh), nil)
	require.Equal(t, 200, r.Status, "another session is not slowed: %s", r.Raw)
}

// TestRateLimitMissesPerAddress is the hammer: one address asking for assets that do not
// exist gets about 100 answers (404) before 429, and of 2 000 such requests at full speed only
// the burst plus 100 a second reach the scene service (each a lookup in Postgres: 2 000 misses
// cost about 1 590 transactions before the limit); meanwhile another address streams 2 000
// tiles of a public scene, LOD-style on 16 connections, and is never refused.
func TestRateLimitMissesPerAddress(t *testing.T) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	r := do(t, "GET", splatPath(id), tn.keys(""), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	asset := strings.TrimPrefix(splatOf(r)["splatUrl"].(string), env.URL)
	require.True(t, strings.HasPrefix(asset, "/assets/"), asset)
	missing := "/assets/" + tn.IntegrationID + "/" + ids.New() + "/nothing-here.splat"

	hammer, viewer := clientFrom("127.0.0.41"), clientFrom("127.0.0.42")
	var misses, reads floodCounts
	var wg sync.WaitGroup

	// First the burst: rounds of 50 at once until the first refusal, about 100 get their 404. A
	// bound on the count, not on time: a slow machine sends slower than the bucket refills.
	start := time.Now()
	sent := 0
	for misses.first.Load() == nil && sent < 1000 {
		flood(&wg, hammer, missing, 50, 8, 404, &misses)
		wg.Wait()
		sent += 50
	}
	require.Zero(t, misses.other.Load()+reads.other.Load())
	require.NotNil(t, misses.first.Load(), "refused within %d misses", sent)
	require.GreaterOrEqual(t, misses.passed.Load(), int64(100), "the burst of misses is answered")
	require.LessOrEqual(t, misses.passed.Load(), int64(100+int(time.Since(start)/(10*time.Millisecond))+8), "then 429")
	require.Equal(t, int64(sent), misses.passed.Load()+misses.refused.Load())
	requireLimited(t, misses.first.Load(), "miss")

	// Then 2 000 more misses from the same address and a viewer's 2 000 reads from another, at once.
	misses.passed.Store(0)
	start = time.Now()
	flood(&wg, hammer, missing, 2000, 16, 404, &misses)
	flood(&wg, viewer, asset, 2000, 16, 200, &reads)
	wg.Wait()
	elapsed := time.Since(start)
	require.Zero(t, misses.other.Load()+reads.other.Load())
	require.Zero(t, reads.refused.Load(), "a viewer loading thousands of tiles is never refused")
	require.Equal(t, int64(2000), reads.passed.Load())
	// What was left of the bucket, 100 a second while the flood lasted, and the requests in
	// flight when it emptied: far below the 2 000 lookups the flood would have cost.
	require.LessOrEqual(t, misses.passed.Load(), int64(100*elapsed.Seconds())+100+16, "misses that reached the scene service in %s", elapsed)
	t.Logf("flood of 2000 misses in %s: %d answered 404, %d refused; 2000 reads served", elapsed.Round(time.Millisecond), misses.passed.Load(), misses.refused.Load())

	// The address recovers: the bucket refills within a second.
	time.Sleep(1100 * time.Millisecond)
	r2, err := getFrom(hammer, env.ProcessURL, missing, nil)
	require.NoError(t, err)
	require.Equal(t, 404, r2.Status, string(r2.Raw))
}

// TestRateLimitNewVisitorsPerSession: a viewer session sending likes and views with random
// visitorIds raises likeCount and uniqueViews by at most the bound (5 new visitors a minute,
// 5 at once): the rest answer 429 and count nothing. A known visitor's like stays idempotent.
func TestRateLimitNewVisitorsPerSession(t *testing.T) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	liker := mintToken(t, tn, "", map[string]any{"type": "viewer"})
	start := time.Now()
	liked, refused := 0, 0
	for i, r := range likesOfNewVisitors(t, liker, id, 50) {
		switch r.Status {
		case 200:
			liked++
		case 429:
			refused++
			requireLimited(t, r, "visitors")
		default:
			t.Fatalf("like %d: %d %s", i, r.Status, r.Raw)
		}
	}
	bound := 5 + int(time.Since(start)/(12*time.Second))
	require.LessOrEqual(t, liked, bound, "likes by new visitors")
	require.GreaterOrEqual(t, liked, 5, "the first visitors are welcome")
	scene := splatOf(do(t, "GET", splatPath(id), tn.keys(""), nil))
	require.Equal(t, float64(liked), scene["likeCount"], "likeCount rose by the accepted likes only")

	viewer := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": id})
	start = time.Now()
	viewed := 0
	for i := range 50 {
		r := doAt(t, env.ProcessURL, "POST", "/api/embed/views", sessionHeaders(viewer),
			map[string]any{"splatId": id, "visitorId": fmt.Sprintf("drive-by-%d-%s", i, ids.New())})
		switch r.Status {
		case 202:
			viewed++
		case 429:
			requireLimited(t, r, "visitors")
		default:
			t.Fatalf("view %d: %d %s", i, r.Status, r.Raw)
		}
	}
	bound = 5 + int(time.Since(start)/(12*time.Second))
	require.LessOrEqual(t, viewed, bound, "views by new visitors")
	require.GreaterOrEqual(t, viewed, 5)
	require.Eventually(t, func() bool {
		totals := analyticsOf(t, tn, "", id, "?window=1")["totals"].(map[string]any)
		return totals["impressions"] == float64(viewed)
	}, visibleWithin, 100*time.Millisecond, "the accepted views reach the analytics")
	totals := analyticsOf(t, tn, "", id, "?window=1")["totals"].(map[string]any)
	require.Equal(t, float64(viewed), totals["uniqueViews"], "uniqueViews rose by the bound at most")
	require.Eventually(t, func() bool { return viewCount(t, tn, id) == int64(viewed) }, visibleWithin, 100*time.Millisecond,
		"viewCount rose by the accepted views only")
	time.Sleep(time.Second) // nothing more arrives
	require.Equal(t, int64(viewed), viewCount(t, tn, id))
}

// TestRateLimitViewsPerSession: one session records at most 30 views a minute, even of one
// visitor; a like is not a view.
func TestRateLimitViewsPerSession(t *testing.T) {
	tn := newTenant(t)
	id := publicScene(t, tn, "ada")
	tok := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": id})
	start := time.Now()
	accepted := 0
	var refused *testenv.Response
	for i := 0; i < 60 && refused == nil; i++ {
		r := doAt(t, env.ProcessURL, "POST", "/api/embed/views", sessionHeaders(tok), map[string]any{"splatId": id, "visitorId": "one-browser"})
		switch r.Status {
		case 202:
			accepted++
		case 429:
			refused = r
		default:
			t.Fatalf("view %d: %d %s", i, r.Status, r.Raw)
		}
	}
	require.NotNil(t, refused)
	require.GreaterOrEqual(t, accepted, 30)
	require.LessOrEqual(t, accepted, 30+int(time.Since(start)/(2*time.Second)))
	requireLimited(t, refused, "views")
	r := doAt(t, env.ProcessURL, "POST", "/api/embed/splats/"+id+"/like", sessionHeaders(tok), map[string]any{"visitorId": "one-browser"})
	require.Equal(t, 200, r.Status, string(r.Raw))
}

// TestRateLimitNoCollateral (issue 38): a stranger's burst of misses from an address shared with
// an integrator (a cloud NAT's egress) leaves the integrator's valid calls from that address at
// 0 refusals, while the stranger is refused as before and its random keys, once the address is
// out of misses, cost no key lookup in Postgres.
func TestRateLimitNoCollateral(t *testing.T) {
	const quota = 20
	withRateLimits(t, func(c *config.RateLimits) {
		// One miss back every 30 s: the address stays out of misses for the whole test.
		c.Miss = ratelimit.Limit{Quota: quota, Window: 10 * time.Minute}
	})
	tn := newTenant(t)
	// An integration that makes its first call ever while the address is out of misses: its
	// keys were never looked up, and are known from its creation's notification.
	newcomer := newTenant(t)
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", tn.keys("ada"), map[string]any{}).Status)
	nat := clientFrom("127.0.0.43")
	stranger := func() (*testenv.Response, error) {
		pk, sk := credentials.NewKeyPair() // well-formed, unknown: each costs a lookup while allowed
		return getFrom(nat, env.ProcessURL, "/api/v1/external-user",
			map[string]string{"Authorization": "Bearer " + sk, "X-Service-Public-Key": pk, "X-Service-External-User-Id": "x"})
	}
	valid := func() (*testenv.Response, error) {
		return getFrom(nat, env.ProcessURL, "/api/v1/external-user", tn.keys("ada"))
	}
	// The integrator's calls work from the address before anything happens.
	r, err := valid()
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))

	// The stranger spends the address's misses.
	misses := 0
	for {
		r, err := stranger()
		require.NoError(t, err)
		if r.Status == 429 {
			requireLimited(t, r, "miss")
			break
		}
		require.Equal(t, 401, r.Status, string(r.Raw))
		misses++
		require.LessOrEqual(t, misses, quota, "the address is refused after its allowance")
	}

	// Then a burst of 400 more misses on 8 connections while the integrator makes 100 calls from
	// the same address.
	loads := env.Process.Integrations.Loads()
	var strangers floodCounts
	var wg sync.WaitGroup
	jobs := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			for range jobs {
				r, err := stranger()
				switch {
				case err != nil:
					strangers.other.Add(1)
				case r.Status == 429:
					strangers.refused.Add(1)
					strangers.first.CompareAndSwap(nil, r)
				case r.Status == 401:
					strangers.passed.Add(1)
				default:
					strangers.other.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for range 400 {
			jobs <- struct{}{}
		}
		close(jobs)
	})
	refused := 0
	for i := range 100 {
		r, err := valid()
		require.NoError(t, err)
		if r.Status == 429 {
			refused++
			continue
		}
		require.Equal(t, 200, r.Status, "call %d: %s", i, r.Raw)
		require.Regexp(t, `^"integration";r=\d+;t=\d+$`, r.Header.Get("RateLimit"), "limited by its own budget")
	}
	wg.Wait()
	require.Zero(t, refused, "the integrator's valid calls refused because of the stranger's misses")
	require.Zero(t, strangers.other.Load())
	require.Equal(t, int64(400), strangers.refused.Load()+strangers.passed.Load())
	// The window's refill (one every 3 s) may let a few through; nothing else is.
	require.LessOrEqual(t, strangers.passed.Load(), int64(3), "the stranger stays refused")
	requireLimited(t, strangers.first.Load(), "miss")
	// Refusing the stranger's keys still costs no lookup: only the few misses the refill let
	// through (and a reload of the integrator's key after another test's NOTIFY) reach Postgres.
	require.LessOrEqual(t, env.Process.Integrations.Loads()-loads, strangers.passed.Load()+5,
		"key lookups during 400 refused misses")
	t.Logf("400 misses beside 100 valid calls from one address: %d misses refused, %d answered 401, %d valid calls refused, %d key lookups",
		strangers.refused.Load(), strangers.passed.Load(), refused, env.Process.Integrations.Loads()-loads)

	// The newcomer is served too. Its keys became known when the gateway heard the notification
	// of its creation, which may still be on its way: wait for it (the address gets no miss back
	// for 30 s, so only that notification can let the call through).
	r, err = stranger()
	require.NoError(t, err)
	requireLimited(t, r, "miss")
	require.Eventually(t, func() bool {
		r, err := getFrom(nat, env.ProcessURL, "/api/v1/external-user", newcomer.keys("bob"))
		require.NoError(t, err)
		return r.Status == 404 // the customer bob does not exist: authenticated, then answered
	}, 10*time.Second, 20*time.Millisecond, "an integration's first call from an address out of misses")
}

// apiHammer tallies what one gateway answered an integration's hammer.
type apiHammer struct {
	admitted, refused, other atomic.Int64
	first                    atomic.Pointer[testenv.Response]
	lastOther                atomic.Pointer[string]
}

// hammerAPI sends an integration's cheapest call from 16 keep-alive connections to each of
// urls for d, and tallies each gateway's answers.
func hammerAPI(tn tenant, urls []string, d time.Duration) []*apiHammer {
	deadline := time.Now().Add(d)
	out := make([]*apiHammer, len(urls))
	var wg sync.WaitGroup
	for i, base := range urls {
		h := &apiHammer{}
		out[i] = h
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}
		for range 16 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					r, err := getFrom(c, base, "/api/v1/splats?limit=1", tn.keys(""))
					switch {
					case err != nil:
						msg := err.Error()
						h.lastOther.Store(&msg)
						h.other.Add(1)
					case r.Status == 200:
						h.admitted.Add(1)
					case r.Status == 429:
						h.refused.Add(1)
						h.first.CompareAndSwap(nil, r)
					default:
						msg := fmt.Sprintf("%d %s", r.Status, r.Raw)
						h.lastOther.Store(&msg)
						h.other.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	return out
}

// TestRateLimitAcrossGateways is the two-gateway hammer: a free plan's integration
// (200 requests per 10 s: a burst of 200, then one every 50 ms) hammered through two gateway
// processes at once for 3 s is served its budget (the burst plus the refill while the hammer
// lasted) within 10 %, not twice it; hammered through one gateway alone it still gets its whole
// budget; and when one of two gateways dies mid-hammer, what it held does not stay locked up:
// the other serves the rest of the budget.
func TestRateLimitAcrossGateways(t *testing.T) {
	sp := chaosSplit(t, func(o *testenv.SplitOptions) { o.Gateways = 2 })
	require.Len(t, sp.URLs, 2)
	lim := env.Config.RateLimit.APIFree
	require.Equal(t, ratelimit.Limit{Quota: 200, Window: 10 * time.Second}, lim, "the free plan's default")
	interval := lim.Window / time.Duration(lim.Quota)

	// hammer runs hammerAPI for d (calling midway, if set, halfway through) and checks every
	// answer was a 200 or a well-formed refusal, each gateway refused (the load was above the
	// limit), and the admitted total is the budget within 10 %.
	hammer := func(name string, urls []string, d time.Duration, midway func()) {
		tn := newIntegration(t, newAccount(t, "free", 1<<20), nil)
		start := time.Now()
		if midway != nil {
			time.AfterFunc(d/2, midway)
		}
		got := hammerAPI(tn, urls, d)
		elapsed := time.Since(start)
		budget := lim.Quota + int(elapsed/interval)
		admitted := 0
		for i, h := range got {
			admitted += int(h.admitted.Load())
			t.Logf("%s: gateway %d admitted %d, refused %d, other %d", name, i+1, h.admitted.Load(), h.refused.Load(), h.other.Load())
			if midway == nil || i == 0 {
				require.Zero(t, h.other.Load(), "%s, gateway %d: last other answer %v", name, i+1, h.lastOther.Load())
			}
			require.NotNil(t, h.first.Load(), "%s: gateway %d never refused: the hammer stayed under the limit", name, i+1)
			requireLimited(t, h.first.Load(), "integration")
		}
		t.Logf("%s: %d admitted in %s against a budget of %d", name, admitted, elapsed.Round(time.Millisecond), budget)
		require.InDelta(t, budget, admitted, float64(budget)/10, "%s: admitted within 10 %% of the budget", name)
	}

	hammer("two gateways", sp.URLs, 3*time.Second, nil)
	hammer("one gateway", sp.URLs[:1], 3*time.Second, nil)
	killed := make(chan error, 1)
	hammer("one of two dies", sp.URLs, 3*time.Second, func() { killed <- sp.Kill("gateway-2") })
	require.NoError(t, <-killed)
}
