package httpx

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/metrics"
	"github.com/splathost/splathost/internal/quota"
)

// TestMetricsLabelsByRouteTemplate: a request is counted under its route's template, never its
// raw path; a path no route serves is "unmatched" whatever it is; quota refusals count by
// dimension and scope.
func TestMetricsLabelsByRouteTemplate(t *testing.T) {
	app := NewApp("metrics-test", slog.New(slog.DiscardHandler), 1<<20, 0)
	app.Get("/things/:id", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Post("/full", func(c *fiber.Ctx) error { return quota.StorageExceeded("account", 5, 5, 1) })
	app.Use(Fallback(app))

	count := func(route, status string) float64 {
		return testutil.ToFloat64(metrics.HTTPRequests.WithLabelValues("metrics-test", route, "GET", status))
	}
	for _, p := range []string{"/things/a", "/things/b", "/nope/1", "/nope/2"} {
		_, err := app.Test(httptest.NewRequest("GET", p, nil))
		require.NoError(t, err)
	}
	require.Equal(t, 2.0, count("/things/:id", "200"))
	require.Equal(t, 2.0, count("unmatched", "404"))

	rejected := metrics.QuotaRejections.WithLabelValues("storageBytes", "account")
	was := testutil.ToFloat64(rejected)
	resp, err := app.Test(httptest.NewRequest("POST", "/full", nil))
	require.NoError(t, err)
	require.Equal(t, 413, resp.StatusCode)
	require.Equal(t, was+1, testutil.ToFloat64(rejected))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.HTTPRequests.WithLabelValues("metrics-test", "/full", "POST", "413")))
}

// TestMetricsGuard: a process's /metrics and /debug/pprof answer only the admin token or a
// caller header signed with the internal secret for the operator; anything else, a missing
// credential first, is a 401 with the envelope. A guard built without a token or secret admits
// nobody by it, and MountMetrics without a guard admits nobody at all.
func TestMetricsGuard(t *testing.T) {
	const token = "admin-token-0123456789"
	secret := []byte("internal-secret-for-tests")
	signed := func(scheme Scheme, at time.Time) string {
		h, err := SignCaller(secret, &Caller{Scheme: scheme}, at)
		require.NoError(t, err)
		return h
	}
	get := func(app *fiber.App, path string, headers map[string]string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := app.Test(req, -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	app := NewApp("guard-test", slog.New(slog.DiscardHandler), 1<<20, 0)
	MountMetrics(app, MetricsGuard(token, secret), true)
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		for name, h := range map[string]map[string]string{
			"none":               nil,
			"wrong token":        {"Authorization": "Bearer not-the-admin-token"},
			"token not a bearer": {"Authorization": token},
			"empty bearer":       {"Authorization": "Bearer "},
			"integration caller": {CallerHeader: signed(SchemeKey, time.Now())},
			"expired admin":      {CallerHeader: signed(SchemeAdmin, time.Now().Add(-time.Hour))},
			"forged admin":       {CallerHeader: signed(SchemeAdmin, time.Now()) + "x"},
		} {
			status, body := get(app, path, h)
			require.Equal(t, 401, status, "%s %s", path, name)
			require.Equal(t, "error", body["status"], "%s %s", path, name)
			require.NotEmpty(t, body["message"], "%s %s", path, name)
		}
		for name, h := range map[string]map[string]string{
			"admin token":  {"Authorization": "Bearer " + token},
			"signed admin": {CallerHeader: signed(SchemeAdmin, time.Now())},
		} {
			status, _ := get(app, path, h)
			require.Equal(t, 200, status, "%s %s", path, name)
		}
	}

	empty := NewApp("guard-test", slog.New(slog.DiscardHandler), 1<<20, 0)
	MountMetrics(empty, MetricsGuard("", nil), false)
	status, _ := get(empty, "/metrics", map[string]string{"Authorization": "Bearer ", CallerHeader: signed(SchemeAdmin, time.Now())})
	require.Equal(t, 401, status)

	open := NewApp("guard-test", slog.New(slog.DiscardHandler), 1<<20, 0)
	MountMetrics(open, nil, true)
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		status, _ := get(open, path, map[string]string{"Authorization": "Bearer " + token})
		require.Equal(t, 401, status, path)
	}
}
