package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/routes"
)

// Test credentials of the path harness.
const (
	harnessAdmin  = "admin-token-0123456789"
	harnessSecret = "internal-secret-for-tests"
)

// serviceRoutes are the routes every service process serves besides its API (MountHealth,
// MountMetrics with pprof): no client path may reach them through the gateway.
var serviceRoutes = []string{"/healthz", "/readyz", "/metrics", "/debug"}

// hit is what a harness upstream saw of one request: its request target and path as received
// and the route of the upstream that served it.
type hit struct {
	upstream, uri, path, route string
}

// pathHarness is a split gateway on a real listener whose user, scene and session upstreams
// are service-like Fiber apps (the services' app, with their health, metrics and pprof routes
// and a catch-all), recording what reaches them by request id.
type pathHarness struct {
	addr string
	mu   sync.Mutex
	hits map[string]hit
	seq  atomic.Int64
	conn net.Conn
	br   *bufio.Reader
}

// newPathHarness starts the harness; tb's cleanup stops it.
func newPathHarness(tb testing.TB) *pathHarness {
	tb.Helper()
	h := &pathHarness{hits: map[string]hit{}}
	log := slog.New(slog.DiscardHandler)
	upstream := func(name string) string {
		app := httpx.NewApp(name, log, 1<<20, 0)
		record := func(c *fiber.Ctx) error {
			if id := c.Get(httpx.RequestIDHeader); strings.HasPrefix(id, "harness-") {
				h.mu.Lock()
				h.hits[id] = hit{upstream: name, uri: string(c.Request().Header.RequestURI()),
					path: string(c.Request().URI().PathOriginal()), route: c.Route().Path}
				h.mu.Unlock()
			}
			return c.SendString(name)
		}
		app.Get("/healthz", record)
		app.Get("/readyz", record)
		app.Get("/metrics", record)
		app.Use("/debug", record)
		app.All("/*", record)
		return serveApp(tb, app)
	}
	gw, err := New(Options{
		Log: log, BodyLimit: 1 << 20, AdminToken: harnessAdmin, InternalSecret: []byte(harnessSecret),
		Integrations: &credentials.Cache{}, Sessions: fakeSessions{}, Pprof: true,
		Upstreams: []Upstream{
			{Name: "user", Prefixes: routes.User, URL: upstream("user")},
			{Name: "scene", Prefixes: routes.Scene, Public: routes.ScenePublic, URL: upstream("scene")},
			{Name: "session", Prefixes: routes.Session, URL: upstream("session")},
		},
	})
	require.NoError(tb, err)
	h.addr = strings.TrimPrefix(serveApp(tb, gw), "http://")
	tb.Cleanup(func() {
		if h.conn != nil {
			_ = h.conn.Close()
		}
	})
	return h
}

// serveApp serves app on a loopback port until the test ends and returns its base URL.
func serveApp(tb testing.TB, app *fiber.App) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	go func() { _ = app.Listener(ln) }()
	tb.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}

// answer is the gateway's answer to one raw request and what reached an upstream.
type answer struct {
	status int
	body   map[string]any
	hit    *hit
}

// send writes "GET <target> HTTP/1.1" with the given Authorization (none when empty) to the
// gateway as raw bytes (nothing between the test and the gateway normalises the target).
func (h *pathHarness) send(tb testing.TB, target, authorization string) answer {
	tb.Helper()
	id := fmt.Sprintf("harness-%d", h.seq.Add(1))
	req := "GET " + target + " HTTP/1.1\r\nHost: gateway.test\r\nX-Request-Id: " + id + "\r\n"
	if authorization != "" {
		req += "Authorization: " + authorization + "\r\n"
	}
	req += "\r\n"
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		if h.conn == nil {
			c, err := net.Dial("tcp", h.addr)
			require.NoError(tb, err)
			h.conn, h.br = c, bufio.NewReader(c)
		}
		_ = h.conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, err := io.WriteString(h.conn, req)
		if err == nil {
			resp, err = http.ReadResponse(h.br, nil)
		}
		if err == nil {
			break
		}
		// A keep-alive connection the gateway closed after its previous answer: once more.
		_ = h.conn.Close()
		h.conn = nil
		require.Less(tb, attempt, 1, "raw request %q: %v", target, err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(tb, err)
	if resp.Close {
		_ = h.conn.Close()
		h.conn = nil
	}
	a := answer{status: resp.StatusCode}
	_ = json.Unmarshal(raw, &a.body)
	h.mu.Lock()
	if got, ok := h.hits[id]; ok {
		a.hit = &got
		delete(h.hits, id)
	}
	h.mu.Unlock()
	return a
}

// refused reports whether a is the gateway's non-canonical path refusal.
func (a answer) refused() bool {
	return a.status == fiber.StatusBadRequest && a.body["code"] == NonCanonicalPathCode
}

// serviceRoute reports whether route is one of a service's own routes (serviceRoutes).
func serviceRoute(route string) bool {
	for _, r := range serviceRoutes {
		if route == r || strings.HasPrefix(route, r+"/") {
			return true
		}
	}
	return false
}
