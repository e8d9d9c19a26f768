package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ratelimit"
)

// limitedApp is a gateway-shaped app around rl: the address scope first, then /api/v1 and
// /api/embed behind a stand-in authentication (a "key" or "session" header names the caller,
// "plan" its plan; neither: 401) with the keyed scope after it, then routes that answer the
// status in their path (/assets/200, /assets/404, /api/v1/x/404, …).
func limitedApp(rl *RateLimits) *fiber.App {
	app := httpx.NewApp("test", slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), 1<<20, 0)
	app.Use(rl.Handle)
	auth := func(c *fiber.Ctx) error {
		switch {
		case c.Get("key") != "":
			httpx.SetCaller(c, &httpx.Caller{Scheme: httpx.SchemeKey, IntegrationID: c.Get("key"), Plan: c.Get("plan")})
		case c.Get("session") != "":
			httpx.SetCaller(c, &httpx.Caller{Scheme: httpx.SchemeSession, IntegrationID: "in",
				Session: map[string]any{httpx.SessionID: c.Get("session")}})
		default:
			return apperr.Unauthorized("no credentials")
		}
		return c.Next()
	}
	app.Use("/api/v1", auth, rl.Scoped)
	app.Use("/api/embed", auth, rl.Scoped)
	app.Get("/embed/viewer", httpx.Page, func(c *fiber.Ctx) error { return c.SendString("<html>") })
	app.Get("/*", func(c *fiber.Ctx) error {
		parts := strings.Split(c.Path(), "/")
		status, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			return apperr.NotFound("no such thing")
		}
		if status >= 400 {
			return apperr.New(status, "as asked")
		}
		return c.SendStatus(status)
	})
	return app
}

// limits are the defaults with the given changes.
func limits(change func(*config.RateLimits)) config.RateLimits {
	cfg := config.DefaultRateLimits
	change(&cfg)
	return cfg
}

func send(t *testing.T, app *fiber.App, path string, headers map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := app.Test(req, -1)
	require.NoError(t, err)
	return resp
}

// requireRateLimited checks a refusal: 429, the envelope with code RATE_LIMITED and the policy,
// Retry-After in whole seconds, and the RateLimit fields naming the policy.
func requireRateLimited(t *testing.T, resp *http.Response, policy string) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, 429, resp.StatusCode, string(body))
	var env map[string]any
	require.NoError(t, json.Unmarshal(body, &env), string(body))
	require.Equal(t, "error", env["status"])
	require.Equal(t, "RATE_LIMITED", env["code"])
	require.Equal(t, policy, env["policy"])
	require.NotEmpty(t, env["message"])
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, secs)
	require.Equal(t, float64(secs), env["retryAfter"])
	require.Contains(t, resp.Header.Get("RateLimit-Policy"), `"`+policy+`";q=`)
	require.Equal(t, `"`+policy+`";r=0;t=`+strconv.Itoa(secs), resp.Header.Get("RateLimit"))
}

func TestMissesAreLimitedPerAddressAndReadsAreNot(t *testing.T) {
	rl := NewRateLimits(limits(func(c *config.RateLimits) {
		c.Miss = ratelimit.Limit{Quota: 5, Window: time.Second}
		c.Read = ratelimit.Limit{Quota: 1000, Window: time.Second}
	}))
	app := limitedApp(rl)
	// Successful reads never touch the miss bucket: a viewer's tiles.
	for i := range 300 {
		resp := send(t, app, "/assets/200", nil)
		require.Equal(t, 200, resp.StatusCode, "read %d", i)
	}
	resp := send(t, app, "/assets/200", nil)
	require.Equal(t, `"miss";q=5;w=1,"read";q=1000;w=1`, resp.Header.Get("RateLimit-Policy"))
	require.Regexp(t, `^"read";r=\d+;t=1$`, resp.Header.Get("RateLimit"))
	for i := range 5 {
		resp := send(t, app, "/assets/404", nil)
		require.Equal(t, 404, resp.StatusCode, "miss %d", i)
		require.Equal(t, `"miss";r=`+strconv.Itoa(4-i)+`;t=1`, resp.Header.Get("RateLimit"))
	}
	requireRateLimited(t, send(t, app, "/assets/404", nil), "miss")
	// A stranger out of misses is refused whatever it asks next, including what exists.
	requireRateLimited(t, send(t, app, "/assets/200", nil), "miss")
	// Bad credentials on the keyed routes are misses of the address too: each costs a lookup.
	requireRateLimited(t, send(t, app, "/api/v1/x/200", nil), "miss")

	// The bucket refills: one miss every 200 ms.
	time.Sleep(250 * time.Millisecond)
	require.Equal(t, 404, send(t, app, "/assets/404", nil).StatusCode)
	requireRateLimited(t, send(t, app, "/assets/404", nil), "miss")
}

func TestReadLimitRefusesPastItsQuota(t *testing.T) {
	app := limitedApp(NewRateLimits(limits(func(c *config.RateLimits) {
		c.Read = ratelimit.Limit{Quota: 20, Window: 10 * time.Second}
	})))
	for range 20 {
		require.Equal(t, 200, send(t, app, "/assets/200", nil).StatusCode)
	}
	requireRateLimited(t, send(t, app, "/assets/200", nil), "read")
}

func TestKeyedScopes(t *testing.T) {
	rl := NewRateLimits(limits(func(c *config.RateLimits) {
		c.Miss = ratelimit.Limit{Quota: 2, Window: time.Second}
		c.APIFree = ratelimit.Limit{Quota: 3, Window: time.Second}
		c.APIPro = ratelimit.Limit{Quota: 6, Window: time.Second}
		c.Session = ratelimit.Limit{Quota: 4, Window: 2 * time.Second}
	}))
	app := limitedApp(rl)
	for i := range 3 {
		resp := send(t, app, "/api/v1/x/200", map[string]string{"key": "a", "plan": "free"})
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, `"integration";q=3;w=1`, resp.Header.Get("RateLimit-Policy"))
		require.Equal(t, `"integration";r=`+strconv.Itoa(2-i)+`;t=1`, resp.Header.Get("RateLimit"))
	}
	requireRateLimited(t, send(t, app, "/api/v1/x/200", map[string]string{"key": "a", "plan": "free"}), "integration")
	// Its 404s are the integration's business, not a stranger's misses: the address is not charged.
	for i := range 6 {
		require.Equal(t, 404, send(t, app, "/api/v1/x/404", map[string]string{"key": "b", "plan": "pro"}).StatusCode, "pro request %d", i)
	}
	requireRateLimited(t, send(t, app, "/api/v1/x/200", map[string]string{"key": "b", "plan": "pro"}), "integration")
	require.Equal(t, 200, send(t, app, "/api/v1/x/200", map[string]string{"key": "c"}).StatusCode, "every integration has its own bucket")

	for range 4 {
		require.Equal(t, 200, send(t, app, "/api/embed/x/200", map[string]string{"session": "s1"}).StatusCode)
	}
	resp := send(t, app, "/api/embed/x/200", map[string]string{"session": "s1"})
	requireRateLimited(t, resp, "session")
	require.Equal(t, `"session";q=4;w=2`, resp.Header.Get("RateLimit-Policy"))
	require.Equal(t, 200, send(t, app, "/api/embed/x/200", map[string]string{"session": "s2"}).StatusCode, "another session of the integration")
	// Still no miss charged to the address: its two misses are intact.
	require.Equal(t, 404, send(t, app, "/assets/404", nil).StatusCode)
	require.Equal(t, 404, send(t, app, "/assets/404", nil).StatusCode)
	requireRateLimited(t, send(t, app, "/assets/404", nil), "miss")
}

// TestNoCollateral: an address out of misses is still served for requests whose credentials
// verify, each limited by its own integration's or session's bucket only (issue 38: an
// integrator's valid calls answered 429 while a stranger behind the same NAT sent misses);
// what does not authenticate, and everything on the routes anyone may request, stays refused.
func TestNoCollateral(t *testing.T) {
	app := limitedApp(NewRateLimits(limits(func(c *config.RateLimits) {
		c.Miss = ratelimit.Limit{Quota: 3, Window: time.Minute}
		c.APIFree = ratelimit.Limit{Quota: 5, Window: time.Minute}
		c.Session = ratelimit.Limit{Quota: 2, Window: time.Minute}
	})))
	for range 3 {
		require.Equal(t, 401, send(t, app, "/api/v1/x/200", nil).StatusCode)
	}
	requireRateLimited(t, send(t, app, "/api/v1/x/200", nil), "miss")
	requireRateLimited(t, send(t, app, "/assets/404", nil), "miss")
	requireRateLimited(t, send(t, app, "/assets/200", nil), "miss")

	key := map[string]string{"key": "a", "plan": "free"}
	for i := range 5 {
		resp := send(t, app, "/api/v1/x/200", key)
		require.Equal(t, 200, resp.StatusCode, "valid call %d", i)
		require.Regexp(t, `^"integration";r=`+strconv.Itoa(4-i)+`;t=\d+$`, resp.Header.Get("RateLimit"))
		requireRateLimited(t, send(t, app, "/api/v1/x/200", nil), "miss")
	}
	requireRateLimited(t, send(t, app, "/api/v1/x/200", key), "integration")
	// Its own failures are its business: served, and they charge the address nothing more.
	require.Equal(t, 200, send(t, app, "/api/v1/x/200", map[string]string{"key": "b", "plan": "free"}).StatusCode)
	require.Equal(t, 404, send(t, app, "/api/v1/x/404", map[string]string{"key": "b", "plan": "free"}).StatusCode)
	for range 2 {
		require.Equal(t, 200, send(t, app, "/api/embed/x/200", map[string]string{"session": "s1"}).StatusCode)
	}
	requireRateLimited(t, send(t, app, "/api/embed/x/200", map[string]string{"session": "s1"}), "session")
	requireRateLimited(t, send(t, app, "/api/embed/x/200", nil), "miss")
}

func TestRefusedPageIsAnHTMLPage(t *testing.T) {
	app := limitedApp(NewRateLimits(limits(func(c *config.RateLimits) {
		c.Read = ratelimit.Limit{Quota: 1, Window: 10 * time.Second}
	})))
	require.Equal(t, 200, send(t, app, "/embed/viewer", nil).StatusCode)
	resp := send(t, app, "/embed/viewer", nil)
	require.Equal(t, 429, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
}

func TestRefusalOnPublicRouteIsReadableCrossOrigin(t *testing.T) {
	app := limitedApp(NewRateLimits(limits(func(c *config.RateLimits) {
		c.Miss = ratelimit.Limit{Quota: 1, Window: 10 * time.Second}
	})))
	require.Equal(t, 404, send(t, app, "/assets/404", nil).StatusCode)
	resp := send(t, app, "/assets/404", map[string]string{"Origin": "https://shop.example"})
	require.Equal(t, 429, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After")
	req := httptest.NewRequest("OPTIONS", "/assets/404", nil)
	pre, err := app.Test(req, -1)
	require.NoError(t, err)
	require.NotEqual(t, 429, pre.StatusCode, "a preflight is never refused")
}

func TestDisabledAndNilLimitNothing(t *testing.T) {
	for name, rl := range map[string]*RateLimits{
		"disabled": NewRateLimits(limits(func(c *config.RateLimits) {
			c.Enabled = false
			c.Miss = ratelimit.Limit{Quota: 1, Window: time.Minute}
		})),
		"nil": nil,
	} {
		app := limitedApp(rl)
		for range 5 {
			resp := send(t, app, "/assets/404", nil)
			require.Equal(t, 404, resp.StatusCode, name)
			require.Empty(t, resp.Header.Get("RateLimit"), name)
		}
	}
}

func TestSetAppliesAtOnce(t *testing.T) {
	rl := NewRateLimits(limits(func(c *config.RateLimits) { c.Miss = ratelimit.Limit{Quota: 1, Window: time.Minute} }))
	app := limitedApp(rl)
	send(t, app, "/assets/404", nil)
	requireRateLimited(t, send(t, app, "/assets/404", nil), "miss")
	rl.Set(limits(func(c *config.RateLimits) { c.Miss = ratelimit.Limit{} }))
	require.Equal(t, 404, send(t, app, "/assets/404", nil).StatusCode, "a limit turned off lets the address through")
	require.True(t, rl.Config().Miss.Off())
}

// TestClientAddress: the TCP peer, unless it is a trusted proxy, in which case the right-most
// X-Forwarded-For hop that is not one; an IPv6 client is its /64.
func TestClientAddress(t *testing.T) {
	addr := func(proxies []string, xff string) string {
		cfg := &limitsConfig{}
		for _, p := range proxies {
			cfg.TrustedProxies = append(cfg.TrustedProxies, netip.MustParsePrefix(p))
		}
		var got netip.Addr
		app := fiber.New()
		app.Get("/", func(c *fiber.Ctx) error { got = cfg.client(c); return nil })
		req := httptest.NewRequest("GET", "/", nil)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		_, err := app.Test(req, -1)
		require.NoError(t, err)
		return got.String()
	}
	// fiber's test connection comes from 0.0.0.0.
	require.Equal(t, "0.0.0.0", addr(nil, "203.0.113.7"), "X-Forwarded-For is ignored by default")
	require.Equal(t, "0.0.0.0", addr([]string{"10.0.0.0/8"}, "203.0.113.7"), "and from a peer that is not trusted")
	require.Equal(t, "203.0.113.7", addr([]string{"0.0.0.0/32"}, "203.0.113.7"))
	require.Equal(t, "198.51.100.2", addr([]string{"0.0.0.0/32", "10.0.0.0/8"}, "6.6.6.6, 198.51.100.2, 10.1.1.1"),
		"the right-most hop that is not a trusted proxy: what the client wrote before it is not believed")
	require.Equal(t, "2001:db8:1:2::", addr([]string{"0.0.0.0/32"}, "2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "an IPv6 client is its /64")
	require.Equal(t, "203.0.113.9", addr([]string{"0.0.0.0/32"}, "::ffff:203.0.113.9"))
	require.Equal(t, "0.0.0.0", addr([]string{"0.0.0.0/32"}, "not-an-address"), "a malformed hop leaves the proxy as the client")
}

// BenchmarkRateLimits is what the limiter adds to one request of each scope, against the same
// app without it: a public file (address scope, peeked before and charged after the answer) and
// a keyed read (integration scope), with quotas never reached.
func BenchmarkRateLimits(b *testing.B) {
	never := ratelimit.Limit{Quota: 1 << 30, Window: time.Second}
	for _, on := range []bool{false, true} {
		var rl *RateLimits
		if on {
			rl = NewRateLimits(config.RateLimits{Enabled: true, APIFree: never, APIPro: never, APIEnterprise: never,
				Session: never, Miss: never, Read: never})
		}
		app := fiber.New()
		app.Use(rl.Handle)
		app.Use("/api/v1", func(c *fiber.Ctx) error {
			httpx.SetCaller(c, &httpx.Caller{Scheme: httpx.SchemeKey, IntegrationID: "0123456789abcdef01234567", Plan: "pro"})
			return c.Next()
		}, rl.Scoped)
		app.Get("/*", func(c *fiber.Ctx) error { return c.SendStatus(200) })
		h := app.Handler()
		for _, path := range []string{"/assets/a/b.splat", "/api/v1/splats/x"} {
			b.Run(fmt.Sprintf("%s/limiter=%v", path, on), func(b *testing.B) {
				ctx := &fasthttp.RequestCtx{}
				ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 40000}, nil)
				ctx.Request.SetRequestURI(path)
				b.ReportAllocs()
				for b.Loop() {
					ctx.Response.Reset()
					h(ctx)
				}
			})
		}
	}
}
