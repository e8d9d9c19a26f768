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

// MountHealth serves /healthz (the process is alive) and /readyz (every dependency answers).
// Failures are logged with their cause; the response names only the failing dependency.
func MountHealth(app fiber.Router, log *slog.Logger, checks map[string]Check) {
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
		wg.Wait()
		if len(failing) > 0 {
			sort.Strings(failing)
			e := apperr.New(fiber.StatusServiceUnavailable, "not ready").With("failing", failing)
			return c.Status(e.Status).JSON(e.Body())
		}
		return c.JSON(fiber.Map{"status": "ok"})
	})
}
