//go:build e2e

package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// scrape reads a /metrics page and returns every sample, keyed by its series
// (`name{label="value",...}`, labels sorted, as Prometheus prints them).
func scrape(t *testing.T, url string, headers map[string]string) map[string]float64 {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, f)
		require.NoError(t, err)
		for _, s := range vec {
			out[s.Metric.String()] = float64(s.Value)
		}
	}
	return out
}

// TestMetrics reads the gateway's /metrics (admin token only) around real traffic. The test
// product runs every service and the worker in one process, so one page holds every series:
// requests by route template and status, a quota refusal by scope, a clone job's states, and
// views accepted, ingested and spooled (how many, and the oldest's age). Counters are compared before and after, at least
// (tests of this binary run side by side). TestDevStackRunsSplitBinaries scrapes each binary.
func TestMetrics(t *testing.T) {
	inProcessOnly(t)
	page := env.URL + "/metrics"
	before := scrape(t, page, admin())
	requireEnvelope(t, do(t, "GET", "/metrics", nil, nil), 401)
	requireEnvelope(t, do(t, "GET", "/metrics", sessionHeaders("not-the-admin-token"), nil), 401)

	a := newTenant(t)
	src := commitScene(t, a, "metered", 10)
	size := int64(src["fileSizeBytes"].(float64))
	ensureCustomer(t, a, "metered", map[string]any{"limitBytes": size})
	requireEnvelope(t, cloneAnswer(t, a, "metered", src["id"].(string), do(t, "POST", clonePath(src["id"].(string)), a.keys("metered"), nil)), 413)
	ensureCustomer(t, a, "metered", map[string]any{"limitBytes": 4 * size})
	requireCloneSuccess(t, do(t, "POST", clonePath(src["id"].(string)), a.keys("metered"), nil), 201, src)
	patchSplat(t, a, "metered", src["id"].(string), map[string]any{"visibility": "public"})
	view(t, mintToken(t, a, "", map[string]any{"type": "viewer"}), src["id"].(string), "metrics-visitor")

	rose := func(after map[string]float64, series string) {
		t.Helper()
		require.GreaterOrEqual(t, after[series]-before[series], 1.0, "%s: before %v, after %v", series, before[series], after[series])
	}
	var after map[string]float64
	// The worker streams the view in the background.
	require.Eventually(t, func() bool {
		after = scrape(t, page, admin())
		return after[`splathost_views_ingested_total`] > before[`splathost_views_ingested_total`]
	}, eventuallyWait, 200*time.Millisecond)
	rose(after, `splathost_http_requests_total{method="POST", route="/api/v1/splats", service="gateway", status="201"}`)
	rose(after, `splathost_http_requests_total{method="POST", route="/api/v1/splats/:splatId/clone", service="gateway", status="413"}`)
	rose(after, `splathost_http_requests_total{method="GET", route="/metrics", service="gateway", status="401"}`)
	rose(after, `splathost_quota_rejections_total{dimension="storageBytes", scope="customer"}`)
	rose(after, `splathost_clone_jobs_total{state="started"}`)
	rose(after, `splathost_clone_jobs_total{state="succeeded"}`)
	rose(after, `splathost_views_accepted_total`)
	require.Greater(t, after[`splathost_http_request_duration_seconds_count{method="POST", route="/api/v1/splats", service="gateway"}`], 0.0)
	require.Contains(t, after, "splathost_views_spooled")
	require.Contains(t, after, "splathost_views_spooled_oldest_seconds")
	require.GreaterOrEqual(t, after["splathost_views_spooled_oldest_seconds"], 0.0)
	require.Contains(t, after, "splathost_clone_jobs_in_flight")
	require.Contains(t, after, "go_goroutines", "runtime collectors are registered")
	for series := range after {
		require.NotContains(t, series, src["id"].(string), "no series per scene id")
	}
}
