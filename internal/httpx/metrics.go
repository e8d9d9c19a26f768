package httpx

import (
	"crypto/sha256"
	"crypto/subtle"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/pprof"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/metrics"
)

// Metrics counts every request and its latency by route template (never the raw path, which
// holds ids and would make a series per scene), and counts the quota refusals it answers. Each
// series is looked up once and kept (routes, methods and statuses are finite, so the cache is as
// bounded as the series): hashing the label values twice per request cost 2-4% of a service.
func Metrics(component string) fiber.Handler {
	var cache sync.Map // seriesKey → requestSeries
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		status := c.Response().StatusCode()
		if err != nil {
			e := toAppErr(err)
			status = e.Status
			countQuotaRejection(e)
		}
		key := seriesKey{route: routeLabel(c, status), method: c.Method(), status: status}
		v, ok := cache.Load(key)
		if !ok {
			// The map keeps the key: its strings must own their bytes.
			key.route, key.method = strings.Clone(key.route), strings.Clone(key.method)
			v, _ = cache.LoadOrStore(key, requestSeries{
				requests: metrics.HTTPRequests.WithLabelValues(component, key.route, key.method, strconv.Itoa(status)),
				duration: metrics.HTTPDuration.WithLabelValues(component, key.route, key.method),
			})
		}
		s := v.(requestSeries)
		s.requests.Inc()
		s.duration.Observe(time.Since(start).Seconds())
		return err
	}
}

// seriesKey names one request series of a component.
type seriesKey struct {
	route, method string
	status        int
}

// requestSeries are the counter and the histogram of one seriesKey.
type requestSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// routeLabel is the template of the route that answered. A request no route matched ends in
// the catch-all fallback, labelled "unmatched" so scanners cannot mint series. The string is the
// route's own; a caller that keeps it past the request clones it.
func routeLabel(c *fiber.Ctx, status int) string {
	r := c.Route()
	if r == nil || (r.Path == "/" && c.Path() != "/" && (status == fiber.StatusNotFound || status == fiber.StatusMethodNotAllowed)) {
		return "unmatched"
	}
	return r.Path
}

// countQuotaRejection counts an answer carrying the spec's storage (413) or plan-limit (403)
// envelope, by dimension and scope (a plan without the feature is scope "plan").
func countQuotaRejection(e *apperr.Error) {
	switch e.Extra["code"] {
	case "STORAGE_QUOTA_EXCEEDED":
		scope, _ := e.Extra["scope"].(string)
		metrics.QuotaRejections.WithLabelValues("storageBytes", scope).Inc()
	case "plan_limit":
		dim, _ := e.Extra["dimension"].(string)
		scope, _ := e.Extra["scope"].(string)
		if scope == "" {
			scope = "plan"
		}
		metrics.QuotaRejections.WithLabelValues(dim, scope).Inc()
	}
}

// MountMetrics serves the process's Prometheus metrics at /metrics, and Go's profiles at
// /debug/pprof/ when withPprof (config.Config.Pprof), both behind guard in every process: the
// gateway's admin check on its public port, MetricsGuard on a service's or worker's private
// one. A nil guard refuses every request (fail closed), so no caller can mount them open.
func MountMetrics(r fiber.Router, guard fiber.Handler, withPprof bool) {
	if guard == nil {
		guard = func(*fiber.Ctx) error { return errMetricsUnauthorized }
	}
	h := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	r.Get("/metrics", guard, func(c *fiber.Ctx) error {
		h(c.Context())
		return nil
	})
	if withPprof {
		r.Use("/debug/pprof", guard, pprof.New())
	}
}

// errMetricsUnauthorized is the answer to a scrape without a valid credential.
var errMetricsUnauthorized = apperr.Unauthorized("missing or invalid credentials: /metrics and /debug/pprof need the admin token")

// MetricsGuard is the guard of /metrics and /debug/pprof on a service's or worker's private port
// (MountMetrics). It admits the operator's admin token (Authorization: Bearer <token>), which
// Prometheus and the benchmark send, or a caller header signed with the internal secret for the
// operator (what a gateway sends on for an admin request). A private port is guarded too, even
// on loopback: it was one path confusion away from the public (a gateway that forwarded
// /assets/%2e%2e/metrics as /metrics), and is one SSRF away from anything on the host. An empty
// token or secret admits nobody by it.
func MetricsGuard(adminToken string, internalSecret []byte) fiber.Handler {
	want := sha256.Sum256([]byte(adminToken))
	return func(c *fiber.Ctx) error {
		if tok, ok := bearerToken(c); ok && adminToken != "" {
			got := sha256.Sum256([]byte(tok))
			if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
				return c.Next()
			}
		}
		if h := c.Get(CallerHeader); h != "" && len(internalSecret) > 0 {
			if caller, err := VerifyCaller(internalSecret, h, time.Now()); err == nil && caller.Scheme == SchemeAdmin {
				return c.Next()
			}
		}
		return errMetricsUnauthorized
	}
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header.
func bearerToken(c *fiber.Ctx) (string, bool) {
	h := c.Get(fiber.HeaderAuthorization)
	if len(h) < 8 || !strings.EqualFold(h[:7], "bearer ") {
		return "", false
	}
	tok := strings.TrimSpace(h[7:])
	return tok, tok != ""
}
