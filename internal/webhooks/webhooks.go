// Package webhooks is the delivery side of webhooks, free of Fiber and Temporal: one attempt at
// a delivery (Attempts.Attempt), which the WebhookDelivery workflow's activity and a writer's
// direct first attempt (internal/webhookstart) both call, so every attempt takes one code path;
// the settings deliveries need; and the endpoint registry's settings the user service takes.
package webhooks

import (
	"context"
	"fmt"
	"net/http"

	"github.com/splathost/splathost/internal/events"
)

// Settings are what deliveries need: the sealer of the endpoints' secrets, the HTTP client (its
// dialer refuses private targets unless the deployment allows them), how many deliveries one
// endpoint receives at once across the deployment, and how many one integration has in flight
// at once over all its endpoints.
type Settings struct {
	Sealer                 *events.Sealer
	Client                 *http.Client
	Concurrency            int
	IntegrationConcurrency int
	// Wake tells the workflow of a delivery waiting for one of its endpoint's slots that one
	// just came free (nil: waiters find out at their next timer).
	Wake func(ctx context.Context, deliveryID string) error
}

// Registry are the endpoint registry's settings (the user service's): the sealer of signing
// secrets, whether endpoints may target private addresses (make dev, tests), and the starter
// of the deliveries of the events the registry's process writes.
type Registry struct {
	Sealer       *events.Sealer
	AllowPrivate bool
	Starter      events.Starter
}

// InvalidError is an attempt that can never succeed as asked (no delivery id, an endpoint secret
// that does not open): retrying it is pointless, so the activity fails it for good.
type InvalidError struct{ Reason string }

// Error is the reason.
func (e *InvalidError) Error() string { return e.Reason }

// invalid is an InvalidError of the formatted reason.
func invalid(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}
