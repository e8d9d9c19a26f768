package httpx

import (
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/metrics"
)

// Metrics counts every request and its latency by route template (never the raw path, which
// holds ids and would make a series per scene), and counts the quota refusals it answers.
func Metrics(component string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		status := c.Response().StatusCode()
		if err != nil {
			e := toAppErr(err)
			status = e.Status
			countQuotaRejection(e)
		}
		route := routeLabel(c, status)
		method := strings.Clone(c.Method())
		metrics.HTTPRequests.WithLabelValues(component, route, method, strconv.Itoa(status)).Inc()
		metrics.HTTPDuration.WithLabelValues(component, route, method).Observe(time.Since(start).Seconds())
		return err
	}
}

// routeLabel is the template of the route that answered. A request no route matched ends in
// the catch-all fallback, labelled "unmatched" so scanners cannot mint series.
func routeLabel(c *fiber.Ctx, status int) string {
	r := c.Route()
	if r == nil || (r.Path == "/" && c.Path() != "/" && (status == fiber.StatusNotFound || status == fiber.StatusMethodNotAllowed)) {
		return "unmatched"
	}
	return strings.Clone(r.Path)
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
// given (the gateway's port is public; the services' and worker's ports are private).
func MountMetrics(r fiber.Router, guard fiber.Handler) {
	h := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	serve := func(c *fiber.Ctx) error {
		h(c.Context())
		return nil
	}
	if guard != nil {
		r.Get("/metrics", guard, serve)
		return
	}
	r.Get("/metrics", serve)
}
