package httpx

import (
	"log/slog"
	"net/http/httptest"
	"testing"

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
	app := NewApp("metrics-test", slog.New(slog.DiscardHandler), 1<<20)
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
