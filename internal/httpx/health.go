package httpx

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
)

// Check is one readiness probe of a dependency.
type Check func(ctx context.Context) error

// Detail is a report /readyz adds to its answer under "details" without deciding readiness: a
// state an operator should see (a stalled ClickHouse node, say) that taking this process out
// of service would not mend.
type Detail func(ctx context.Context) (any, error)

// MountHealth serves /healthz (the process is alive) and /readyz (every dependency answers).
// Failures are logged with their cause; the response names only the failing dependency.
func MountHealth(app fiber.Router, log *slog.Logger, checks map[string]Check) {
	MountHealthDetails(app, log, checks, nil)
}

// MountHealthDetails is MountHealth whose /readyz also answers each detail's report under
// "details" (its name → its value), ready or not. A detail that fails is logged and reported as
// {"error": "unavailable"}: its cause stays in the log, as a failing check's does.
func MountHealthDetails(app fiber.Router, log *slog.Logger, checks map[string]Check, details map[string]Detail) {
	app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"status": "ok"})
	})
	app.Get("/readyz", func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), 3*time.Second)
		defer cancel()
		var mu sync.Mutex
		var failing []string
		var wg sync.WaitGroup
		for name, check := range checks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := check(ctx); err != nil {
					log.Warn("readiness check failed", "check", name, "error", err)
					mu.Lock()
					failing = append(failing, name)
					mu.Unlock()
				}
			}()
		}
		reports := map[string]any{}
		for name, detail := range details {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := detail(ctx)
				if err != nil {
					log.Warn("readiness detail failed", "detail", name, "error", err)
					v = fiber.Map{"error": "unavailable"}
				}
				mu.Lock()
				reports[name] = v
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(failing) > 0 {
			sort.Strings(failing)
			e := apperr.New(fiber.StatusServiceUnavailable, "not ready").With("failing", failing)
			if len(details) > 0 {
				e = e.With("details", reports)
			}
			return c.Status(e.Status).JSON(e.Body())
		}
		if len(details) > 0 {
			return c.JSON(fiber.Map{"status": "ok", "details": reports})
		}
		return c.JSON(fiber.Map{"status": "ok"})
	})
}
