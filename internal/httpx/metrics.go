package httpx

import (
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

// MountMetrics serves the process's Prometheus metrics at /metrics, behind guard when one is
// given (the gateway's port is public; the services' and worker's ports are private), and Go's
// profiles at /debug/pprof/ behind the same guard when withPprof (config.Config.Pprof).
func MountMetrics(r fiber.Router, guard fiber.Handler, withPprof bool) {
	h := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	serve := func(c *fiber.Ctx) error {
		h(c.Context())
		return nil
	}
	guarded := []fiber.Handler{serve}
	if guard != nil {
		guarded = []fiber.Handler{guard, serve}
	}
	r.Get("/metrics", guarded...)
	if withPprof {
		use := []any{"/debug/pprof"}
		if guard != nil {
			use = append(use, guard)
		}
		r.Use(append(use, pprof.New())...)
	}
}
