//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/splathost/splathost/gateway"
	"github.com/splathost/splathost/internal/allinone"
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/routes"
	"github.com/splathost/splathost/internal/sessiontoken"
)

func TestCORS(t *testing.T) {
	req, _ := http.NewRequest("OPTIONS", env.URL+"/api/v1/external-user", nil)
	req.Header.Set("Origin", "https://any.example.org")
	req.Header.Set("Access-Control-Request-Method", "PUT")
	req.Header.Set("Access-Control-Request-Headers", "authorization,x-service-public-key,x-service-external-user-id,content-type")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "preflight succeeds without credentials")
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "GET,POST,PUT,PATCH,DELETE,OPTIONS", resp.Header.Get("Access-Control-Allow-Methods"))
	require.Equal(t, "Authorization,X-Service-Public-Key,X-Service-External-User-Id,Content-Type", resp.Header.Get("Access-Control-Allow-Headers"))

	// Real responses, errors included, carry the origin header too.
	r := do(t, "GET", "/api/v1/external-user", map[string]string{"Origin": "https://x.example"}, nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"))
}

func TestUnknownRoutesMethodsAndBodies(t *testing.T) {
	requireEnvelope(t, do(t, "GET", "/nope", nil, nil), 404)
	requireEnvelope(t, do(t, "GET", "/admin/v1/nope", admin(), nil), 404)
	a := newTenant(t)
	requireEnvelope(t, do(t, "GET", "/api/v1/no-such-thing", a.keys("c"), nil), 404)
	r := do(t, "POST", "/api/v1/external-user", a.keys("c"), map[string]any{})
	requireEnvelope(t, r, 405)
	require.Contains(t, r.Header.Get("Allow"), "PUT")
	r = do(t, "DELETE", "/admin/v1/accounts", admin(), nil)
	requireEnvelope(t, r, 405)

	// The gateway answers from the declared length, before the body arrives; net/http would
	// see the connection close mid-upload, so speak raw HTTP.
	status, body := rawRequest(t, fmt.Sprintf("PUT /api/v1/external-user HTTP/1.1\r\nHost: x\r\n"+
		"Authorization: Bearer %s\r\nX-Service-Public-Key: %s\r\nX-Service-External-User-Id: c\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{", a.SecretKey, a.PublicKey, env.Config.BodyLimit+1))
	require.Equal(t, 413, status, body)
	require.Contains(t, body, `"status":"error"`)
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", a.keys("c"), `{"displayName":"`+strings.Repeat("a", 120)+`"}`).Status)
}

func TestRequestIDs(t *testing.T) {
	r := do(t, "GET", "/nope", map[string]string{"X-Request-Id": "trace-me-123"}, nil)
	require.Equal(t, "trace-me-123", r.Header.Get("X-Request-Id"))
	r = do(t, "GET", "/nope", map[string]string{"X-Request-Id": "bad id with spaces"}, nil)
	require.Regexp(t, `^[0-9a-f]{24}$`, r.Header.Get("X-Request-Id"))
}

func TestHealth(t *testing.T) {
	for _, p := range []string{"/healthz", "/readyz"} {
		r := do(t, "GET", p, nil, nil)
		require.Equal(t, 200, r.Status, string(r.Raw))
		require.Equal(t, "ok", r.Body["status"])
	}
}

func TestTemporalUIServes(t *testing.T) {
	resp, err := http.Get(env.State.TemporalUIURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, strings.ToLower(string(body)), "<html")
}

// split is a gateway and the three services each on their own listener, as separate
// processes would be, sharing the test stack's stores.
type split struct {
	gatewayURL, userURL string
	ints                *credentials.Cache
}

func serve(t *testing.T, ctx context.Context, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = boot.ServeListener(ctx, app, ln, time.Second) }()
	return "http://" + ln.Addr().String()
}

func startSplit(t *testing.T) *split {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	logf, err := os.Create(filepath.Join(env.Dir, "split-"+strings.ReplaceAll(t.Name(), "/", "_")+".log"))
	require.NoError(t, err)
	log := slog.New(slog.NewJSONHandler(logf, nil))
	cfg, d := env.Config, env.Process.DB
	checks := map[string]httpx.Check{"postgres": d.Ping}
	userURL := serve(t, ctx, allinone.UserApp(cfg, log, d, env.Process.Temporal, checks))
	sceneURL := serve(t, ctx, allinone.NewSceneService(cfg, log, d, nil, nil, checks).App)
	keys, err := sessiontoken.NewKeys(cfg.SessionKeys)
	require.NoError(t, err)
	sessionURL := serve(t, ctx, allinone.SessionApp(cfg, log, d, keys, checks))
	ints := credentials.NewCache(d.Pool, log)
	go ints.Listen(ctx)
	gw, err := gateway.New(gateway.Options{
		Log: log, BodyLimit: cfg.BodyLimit, AdminToken: cfg.AdminToken, InternalSecret: []byte(cfg.InternalSecret),
		Integrations: ints, Sessions: allinone.SessionVerifier(keys, ints),
		Upstreams: []gateway.Upstream{
			{Name: "user", Prefixes: routes.User, URL: userURL},
			{Name: "scene", Prefixes: routes.Scene, URL: sceneURL},
			{Name: "session", Prefixes: routes.Session, URL: sessionURL},
		},
	})
	require.NoError(t, err)
	s := &split{gatewayURL: serve(t, ctx, gw), userURL: userURL, ints: ints}
	require.Eventually(t, ints.Live, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		r, err := http.Get(s.gatewayURL + "/readyz")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	}, 10*time.Second, 50*time.Millisecond)
	return s
}

func TestSplitGatewayForwardsWithSignedCallerAndTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	s := startSplit(t)
	a := newTenant(t)
	h := a.keys("split-1")
	h["Origin"] = "https://app.example"
	r := doAt(t, s.gatewayURL, "PUT", "/api/v1/external-user", h, map[string]any{"displayName": "Split"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "Split", eu(r.Body)["displayName"])
	require.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"))
	// The same record is visible through the in-process gateway: one system, two topologies.
	require.Equal(t, eu(r.Body)["id"], eu(do(t, "GET", "/api/v1/external-user", a.keys("split-1"), nil).Body)["id"])

	// Service errors come back through the gateway unchanged.
	issues := requireEnvelope(t, doAt(t, s.gatewayURL, "PUT", "/api/v1/external-user", a.keys("split-1"), map[string]any{"limitBytes": -1}), 400)
	require.True(t, issuesMention(issues, "limitBytes"))
	requireEnvelope(t, doAt(t, s.gatewayURL, "GET", "/api/v1/splats-nope", a.keys("c"), nil), 404)

	// One trace from the gateway into the service: the service span is the gateway span's child.
	var gwSpan, svcSpan sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() != "PUT /api/v1/external-user" {
			continue
		}
		switch sp.InstrumentationScope().Name {
		case "github.com/splathost/splathost/gateway":
			gwSpan = sp
		case "github.com/splathost/splathost/user":
			svcSpan = sp
		}
	}
	require.NotNil(t, gwSpan, "gateway span")
	require.NotNil(t, svcSpan, "service span")
	require.Equal(t, gwSpan.SpanContext().TraceID(), svcSpan.SpanContext().TraceID())
	require.Equal(t, gwSpan.SpanContext().SpanID(), svcSpan.Parent().SpanID())
}

func TestServiceRejectsUnsignedOrForgedCallers(t *testing.T) {
	s := startSplit(t)
	a := newTenant(t)
	h := a.keys("direct")
	// Even valid integration keys do not open a service directly: only the gateway's signature does.
	requireEnvelope(t, doAt(t, s.userURL, "PUT", "/api/v1/external-user", h, nil), 401)
	forged, err := httpx.SignCaller([]byte("not-the-internal-secret"), &httpx.Caller{
		Scheme: httpx.SchemeKey, IntegrationID: a.IntegrationID, AccountID: a.AccountID,
		ExternalUserID: "direct", HasExternalUser: true,
	}, time.Now())
	require.NoError(t, err)
	h[httpx.CallerHeader] = forged
	requireEnvelope(t, doAt(t, s.userURL, "PUT", "/api/v1/external-user", h, nil), 401)
	h[httpx.CallerHeader] = "v1.garbage"
	requireEnvelope(t, doAt(t, s.userURL, "GET", "/admin/v1/accounts/"+a.AccountID, h, nil), 401)
	// A caller header sent to the public gateway is stripped, not trusted.
	good, err := httpx.SignCaller([]byte(env.Config.InternalSecret), &httpx.Caller{Scheme: httpx.SchemeAdmin}, time.Now())
	require.NoError(t, err)
	requireEnvelope(t, doAt(t, s.gatewayURL, "GET", "/admin/v1/accounts/"+a.AccountID, map[string]string{httpx.CallerHeader: good}, nil), 401)
}

func TestRevocationReachesEveryGatewayProcess(t *testing.T) {
	s := startSplit(t)
	a := newTenant(t)
	// Warm the other gateway's cache with this integration.
	for i := 0; i < 3; i++ {
		require.Equal(t, 200, doAt(t, s.gatewayURL, "PUT", "/api/v1/external-user", a.keys("x"), nil).Status)
	}
	// Revoke through the main gateway; the other process hears it over LISTEN/NOTIFY.
	require.Equal(t, 200, do(t, "POST", "/admin/v1/integrations/"+a.IntegrationID+"/revoke", admin(), nil).Status)
	require.Eventually(t, func() bool {
		r, err := doErrFree(s.gatewayURL, a.keys("x"))
		return err == nil && r == 410
	}, 5*time.Second, 20*time.Millisecond)

	b := newTenant(t)
	old := b.SecretKey
	require.Equal(t, 200, doAt(t, s.gatewayURL, "PUT", "/api/v1/external-user", b.keys("y"), nil).Status)
	rot := do(t, "POST", "/admin/v1/integrations/"+b.IntegrationID+"/rotate", admin(), nil)
	require.Equal(t, 200, rot.Status)
	require.Eventually(t, func() bool {
		b.SecretKey = old
		r, err := doErrFree(s.gatewayURL, b.keys("y"))
		return err == nil && r == 401
	}, 5*time.Second, 20*time.Millisecond)
}

func doErrFree(base string, h map[string]string) (int, error) {
	req, _ := http.NewRequest("GET", base+"/api/v1/external-user", nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestLogsHoldNoSecrets(t *testing.T) {
	a := newTenant(t)
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", a.keys("logged"), nil).Status)
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user", map[string]string{
		"Authorization": "Bearer msk_wrong-" + a.SecretKey[4:], "X-Service-Public-Key": a.PublicKey, "X-Service-External-User-Id": "logged"}, nil), 401)
	logs, err := os.ReadFile(filepath.Join(env.Dir, "splathost.log"))
	require.NoError(t, err)
	require.Contains(t, string(logs), `"path":"/api/v1/external-user"`, "requests are logged")
	require.NotContains(t, string(logs), a.SecretKey[4:])
	require.NotContains(t, string(logs), env.State.AdminToken)
	require.NotContains(t, string(logs), env.Config.InternalSecret)
}
