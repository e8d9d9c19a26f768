package httpx

import (
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/splathost/splathost/internal/apperr"
)

// NewApp returns a Fiber app with the house defaults: the envelope error handler, a body limit,
// timeouts, panic recovery, request ids and the access log. component names the tracer.
func NewApp(component string, log *slog.Logger, bodyLimit int, budget time.Duration) *fiber.App {
	app := fiber.New(fiber.Config{
		AppName:               "splathost-" + component,
		ErrorHandler:          ErrorHandler(log),
		BodyLimit:             bodyLimit,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           120 * time.Second,
		DisableStartupMessage: true,
		ReadBufferSize:        16 << 10,
	})
	app.Use(recover.New())
	app.Use(RequestIDs())
	app.Use(AccessLog(log))
	app.Use(Metrics(component))
	app.Use(Tracing(component))
	if budget <= 0 {
		budget = RequestBudget
	}
	app.Use(Deadline(budget))
	return app
}

// Fallback answers requests no route matched: 405 with an Allow header when the path exists
// under another method, else 404. Register it after every route.
func Fallback(app *fiber.App) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var allow []string
		seen := map[string]bool{}
		for _, r := range app.GetRoutes(true) {
			if r.Method == fiber.MethodHead || seen[r.Method] || !matchPath(r.Path, c.Path()) {
				continue
			}
			seen[r.Method] = true
			allow = append(allow, r.Method)
		}
		if len(allow) > 0 {
			c.Set(fiber.HeaderAllow, strings.Join(allow, ", "))
			return apperr.New(fiber.StatusMethodNotAllowed, "method not allowed")
		}
		return apperr.NotFound("route not found")
	}
}

// matchPath reports whether path matches a Fiber route pattern with :params and a trailing *.
func matchPath(pattern, path string) bool {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range ps {
		if p == "*" {
			return true
		}
		if i >= len(xs) {
			return false
		}
		if strings.HasPrefix(p, ":") {
			if xs[i] == "" {
				return false
			}
			continue
		}
		if p != xs[i] {
			return false
		}
	}
	return len(ps) == len(xs)
}
