package httpx

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
)

// RequestBudget is the default of config.RequestBudget: how long a request that changes
// something may work before its store and database calls are cut off and its transaction
// rolled back. It is shorter than the gateway's
// wait for a service's answer (UpstreamTimeout), so the service always answers first and the
// answer is final: a commit against a hung store answers 503 "changed nothing" and never
// completes afterwards.
const RequestBudget = 45 * time.Second

// UpstreamTimeout is how long a gateway waits for a service's answer.
const UpstreamTimeout = 60 * time.Second

// Deadline gives each request that may change something (any method but GET, HEAD and OPTIONS:
// reads stream asset bytes and hold room sockets for as long as they last) a context that ends
// after budget. Handlers pass c.UserContext() to every store and database call, so a hung
// dependency cuts the request off at the budget instead of letting it finish after its answer.
func Deadline(budget time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		switch c.Method() {
		case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
			return c.Next()
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), budget)
		defer cancel()
		c.SetUserContext(ctx)
		return c.Next()
	}
}
