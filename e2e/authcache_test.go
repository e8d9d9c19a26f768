//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/ratelimit"
)

// garbageKey returns the i-th of a family of keys no integration holds: oversized, of a wrong
// alphabet, or of exactly the right shape but unknown.
func garbageKey(prefix string, i int) string {
	switch i % 4 {
	case 0:
		return prefix + strings.Repeat(fmt.Sprintf("%08d", i), 1800) // ~14 KB, under the header limit
	case 1:
		return prefix + strings.Repeat("+/=", 14) + fmt.Sprintf("%x", i%16) // wrong alphabet, right length
	case 2:
		return fmt.Sprintf("%s%043d", prefix, i)[:len(prefix)+42] + "A" // right shape, unknown
	default:
		return fmt.Sprintf("x%d", i) // no prefix
	}
}

// TestGarbageKeysNeitherLoadNorGrowTheCache is issue 12's unauthenticated memory exhaustion:
// thousands of garbage public keys and secret bearers (oversized, wrong alphabet, right shape
// but unknown) all answer the 401 envelope of an unknown key, the credential cache does not grow
// by a byte, and real keys are still served from it afterwards.
func TestGarbageKeysNeitherLoadNorGrowTheCache(t *testing.T) {
	// The 4 000 garbage keys stand in for as many strangers: from this one address the miss
	// limit would answer most of them 429 before their keys are looked at, which is not what
	// this test measures (TestRateLimitMissesPerAddress does). They go to the in-process gateway,
	// whose cache is the one watched (and whose limits withRateLimits sets) whatever
	// SPLATHOST_E2E_REPLICAS says.
	withRateLimits(t, func(c *config.RateLimits) { c.Miss = ratelimit.Limit{} })
	a := newTenant(t)
	ints := env.Process.Integrations
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", a.keys("real"), nil).Status)

	const n = 4000
	type result struct {
		status int
		body   string
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	var bytesMax int64
	var mu sync.Mutex
	jobs := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				var req *http.Request
				switch (i / 4) % 3 {
				case 0: // a garbage public key with a well-formed (unknown) secret
					req, _ = http.NewRequest("GET", env.ProcessURL+"/api/v1/splats/trending", nil)
					req.Header.Set("Authorization", "Bearer "+garbageKey(credentials.SecretKeyPrefix, 2))
					req.Header.Set("X-Service-Public-Key", garbageKey(credentials.PublicKeyPrefix, i))
				case 1: // a real public key with a garbage secret
					req, _ = http.NewRequest("GET", env.ProcessURL+"/api/v1/splats/trending", nil)
					req.Header.Set("Authorization", "Bearer "+garbageKey(credentials.SecretKeyPrefix, i))
					req.Header.Set("X-Service-Public-Key", a.PublicKey)
				default: // a garbage secret bearer where sessions are minted
					req, _ = http.NewRequest("POST", env.ProcessURL+"/api/editor/embed-sessions", strings.NewReader(`{"publicKey":"`+a.PublicKey+`"}`))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+garbageKey(credentials.SecretKeyPrefix, i))
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					results <- result{status: -1, body: err.Error()}
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				results <- result{status: resp.StatusCode, body: string(body)}
				mu.Lock()
				bytesMax = max(bytesMax, ints.Bytes())
				mu.Unlock()
			}
		}()
	}
	before, lenBefore := ints.Bytes(), ints.Len()
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(results)
	for r := range results {
		require.Equal(t, 401, r.status, r.body)
		require.Contains(t, r.body, `"status":"error"`)
		require.Contains(t, r.body, `"message":"`)
	}
	// Other tests' integrations may be cached meanwhile, but n misses would be far above this.
	require.LessOrEqual(t, ints.Len(), lenBefore+8, "misses are never cached")
	require.Less(t, bytesMax, before+16<<10, "the cache does not grow with garbage")

	// The real keys still work, from the cache.
	require.Eventually(t, func() bool {
		loads := ints.Loads()
		for i := 0; i < 3; i++ {
			require.Equal(t, 200, do(t, "GET", "/api/v1/external-user", a.keys("real"), nil).Status)
		}
		return ints.Loads() == loads
	}, 10*time.Second, 50*time.Millisecond)
	// A well-formed unknown key is one database lookup and the unknown key's answer; a malformed
	// one is refused before any lookup.
	loads := ints.Loads()
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user", map[string]string{"Authorization": "Bearer " + a.SecretKey,
		"X-Service-Public-Key": garbageKey(credentials.PublicKeyPrefix, 0)}, nil), 401)
	require.Equal(t, loads, ints.Loads(), "a malformed key is never looked up")
}

// TestSessionRightsAreCheckedAtUse: an editor session minted while its integration had the
// editor capability and its customer was active loses the right to save at once when either
// changes; an inactive customer's session still views. The integrator's own REST calls for the
// inactive customer stay allowed. Through the in-process gateway and the split one.
func TestSessionRightsAreCheckedAtUse(t *testing.T) {
	s := startSplit(t)
	for _, gw := range []struct{ name, url string }{{"in-process", env.URL}, {"split", s.gatewayURL}} {
		t.Run(gw.name, func(t *testing.T) {
			at := func(method, path string, h map[string]string, body any) int {
				return doAt(t, gw.url, method, path, h, body).Status
			}
			a := newTenant(t)
			id := newScene(t, a, "eda", 2)["id"].(string)
			ed := sessionHeaders(editorToken(t, a, "eda"))
			save := func() int { return at("PATCH", editorPath("/splats/"+id), ed, map[string]any{"title": "saved"}) }
			require.Equal(t, 200, save())

			// The operator takes the editor capability away: the next save is refused.
			r := doAt(t, gw.url, "PATCH", "/admin/v1/integrations/"+a.IntegrationID, admin(), map[string]any{"capabilities": []string{"viewer"}})
			require.Equal(t, 200, r.Status, string(r.Raw))
			requireEnvelope(t, doAt(t, gw.url, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"title": "x"}), 403)
			r = doAt(t, gw.url, "PATCH", "/admin/v1/integrations/"+a.IntegrationID, admin(), map[string]any{"capabilities": []string{"viewer", "editor"}})
			require.Equal(t, 200, r.Status, string(r.Raw))
			require.Equal(t, 200, save())

			// The integrator deactivates the customer: save, upload, commit and publish are refused
			// at once; viewing still works.
			r = doAt(t, gw.url, "PUT", "/api/v1/external-user", a.keys("eda"), map[string]any{"status": "inactive"})
			require.Equal(t, 200, r.Status, string(r.Raw))
			for _, rt := range editorRoutes(id) {
				if rt.method == "GET" || (gw.name == "split" && strings.HasSuffix(rt.path, "/clone")) {
					// The split harness runs no clone jobs (its scene service has no Temporal
					// client); the in-process run covers the clone route.
					continue
				}
				// Save and publish: 403 (the session may view, not write); uploads, commit and
				// clone: the v1 rule for an inactive customer, 401.
				want := 401
				if rt.method == "PATCH" {
					want = 403
				}
				r := doAt(t, gw.url, rt.method, rt.path, ed, rt.body)
				require.Equal(t, want, r.Status, "%s %s: %s", rt.method, rt.path, r.Raw)
				requireEnvelope(t, r, want)
				require.Contains(t, r.Body["message"], "inactive", "%s %s", rt.method, rt.path)
			}
			requireEnvelope(t, doAt(t, gw.url, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"visibility": "public"}), 403)
			r = doAt(t, gw.url, "GET", "/api/embed/splats/"+id, ed, nil)
			require.Equal(t, 200, r.Status, string(r.Raw))
			require.Equal(t, "saved", splatOf(r)["title"], "nothing written after the deactivation")
			// REST calls the integrator makes for the inactive customer stay allowed.
			r = doAt(t, gw.url, "PATCH", splatPath(id), a.keys("eda"), map[string]any{"title": "by the integrator"})
			require.Equal(t, 200, r.Status, string(r.Raw))

			// Active again: the same session saves again.
			require.Equal(t, 200, at("PUT", "/api/v1/external-user", a.keys("eda"), map[string]any{"status": "active"}))
			require.Equal(t, 200, save())
			// A deleted customer's session may not save either.
			require.Equal(t, 200, at("DELETE", "/api/v1/external-user", a.keys("eda"), nil))
			requireEnvelope(t, doAt(t, gw.url, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"title": "x"}), 403)
		})
	}
}

// TestRevocationAndRotationAreReadYourWrites: a call made right after the revoke or rotate
// answer, with the old keys, through the gateway that forwarded the admin call, never gets in.
// The split gateway hears the change only over NOTIFY from the user service's process unless it
// drops the integration itself before answering.
func TestRevocationAndRotationAreReadYourWrites(t *testing.T) {
	// 200 old keys refused in a few hundred milliseconds from one address is, to the miss limit,
	// a stranger guessing keys: this test measures read-your-writes, not that limit
	// (TestRateLimitMissesPerAddress does), so the in-process gateway's is lifted for it.
	withRateLimits(t, func(c *config.RateLimits) { c.Miss = ratelimit.Limit{} })
	s := startSplit(t)
	// The scene list (the split harness has no ClickHouse for trending): any route behind the keys.
	const list = "/api/v1/splats"
	for _, gw := range []struct{ name, url string }{{"in-process", env.URL}, {"split", s.gatewayURL}} {
		t.Run(gw.name, func(t *testing.T) {
			rotating := newTenant(t)
			for i := 0; i < 200; i++ {
				if i%2 == 0 {
					require.Equal(t, 200, doAt(t, gw.url, "GET", list, rotating.keys(""), nil).Status)
					r := doAt(t, gw.url, "POST", "/admin/v1/integrations/"+rotating.IntegrationID+"/rotate", admin(), nil)
					require.Equal(t, 200, r.Status, string(r.Raw))
					requireEnvelope(t, doAt(t, gw.url, "GET", list, rotating.keys(""), nil), 401)
					rotating.SecretKey = r.Body["integration"].(map[string]any)["secretKey"].(string)
					continue
				}
				a := newIntegration(t, rotating.AccountID, nil)
				require.Equal(t, 200, doAt(t, gw.url, "GET", list, a.keys(""), nil).Status)
				require.Equal(t, 200, doAt(t, gw.url, "POST", "/admin/v1/integrations/"+a.IntegrationID+"/revoke", admin(), nil).Status)
				requireEnvelope(t, doAt(t, gw.url, "GET", list, a.keys(""), nil), 410)
			}
		})
	}
}

// TestListenerReplacesAHalfOpenConnection: a LISTEN connection whose backend stops answering
// (frozen with SIGSTOP, as a half-open TCP connection behaves) is detected by the listener's
// health check within HealthEvery + HealthTimeout (db.DefaultHealthEvery + DefaultHealthTimeout
// in the binaries; shorter here to keep the suite fast), replaced, and the cache flushed, so a
// revocation it missed is in force within that bound; a terminated backend is replaced at once.
func TestListenerReplacesAHalfOpenConnection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ints := credentials.NewCache(env.Process.DB.Pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	const every, timeout = 1500 * time.Millisecond, time.Second
	require.Less(t, every+timeout, db.DefaultHealthEvery+db.DefaultHealthTimeout)
	ints.SetHealthCheck(every, timeout)
	go ints.Listen(ctx)
	require.Eventually(t, ints.Live, 10*time.Second, 20*time.Millisecond)

	a := newTenant(t)
	lookup := func() *credentials.Integration {
		in, err := ints.ByPublicKey(ctx, a.PublicKey)
		require.NoError(t, err)
		require.NotNil(t, in)
		return in
	}
	// Cached once nothing more is announced (the NOTIFY of the creation may still arrive).
	require.Eventually(t, func() bool {
		lookup()
		loads := ints.Loads()
		lookup()
		return ints.Loads() == loads
	}, 5*time.Second, 20*time.Millisecond)
	require.False(t, lookup().Revoked)

	pid := int(ints.ListenerBackend())
	require.NotZero(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	frozen := time.Now()
	// The revocation's NOTIFY is never delivered on the frozen connection.
	require.Equal(t, 200, do(t, "POST", "/admin/v1/integrations/"+a.IntegrationID+"/revoke", admin(), nil).Status)
	bound := every + timeout
	require.Eventually(t, func() bool { return lookup().Revoked }, bound+time.Second, 20*time.Millisecond,
		"a revocation missed by a dead LISTEN connection is in force within the health check's bound")
	t.Logf("revocation in force %s after the connection froze (bound %s)", time.Since(frozen).Round(time.Millisecond), bound)
	// The same bound from the freeze as the revocation's (a revocation read from Postgres at
	// once leaves the replacement its whole bound, not bound after the revocation was seen).
	require.Eventually(t, func() bool { return ints.Live() && int(ints.ListenerBackend()) != pid },
		time.Until(frozen.Add(bound+time.Second)), 20*time.Millisecond, "a new LISTEN connection")
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))

	// A terminated backend is noticed at once and replaced.
	pid = int(ints.ListenerBackend())
	var terminated bool
	require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&terminated))
	require.True(t, terminated)
	require.Eventually(t, func() bool { return ints.Live() && int(ints.ListenerBackend()) != pid }, 5*time.Second, 20*time.Millisecond)
}
