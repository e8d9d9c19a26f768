package webhookstart

import (
	"context"
	"log/slog"
	"sync"

	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/workflows"
)

// webhookStarts bounds the delivery starts one process has in flight, across every batch: a
// burst of events (a customer deletion, a bulk of commits) must not flood the Temporal frontend
// with thousands of concurrent starts, which then all time out (measured on the dev stack's
// SQLite-backed server: 2 000 at once took 17 s each). Waiting starts queue in memory.
var webhookStarts = make(chan struct{}, 8)

// HandOff starts the delivery workflows of committed outbox rows (events.Starter: the
// dispatcher hands it what its direct attempts did not settle) and records the starts, so the
// re-drive leaves them alone. It is client-side wiring, not workflow code: it writes rows
// through ent, which package workflows must not depend on.
type HandOff struct {
	Client    client.Client
	TaskQueue string
	Ent       *ent.Client
	Log       *slog.Logger
}

// StartDeliveries starts each delivery's workflow, a few at a time. Failures are logged; their
// rows stay undispatched for the re-drive.
func (s *HandOff) StartDeliveries(ctx context.Context, ds []events.Delivery) {
	var mu sync.Mutex
	var started []string
	var wg sync.WaitGroup
	for _, d := range ds {
		select {
		case webhookStarts <- struct{}{}:
		case <-ctx.Done():
			s.Log.Warn("webhook starts waited too long; the re-drive will start the rest", "error", ctx.Err())
			wg.Wait()
			_ = events.MarkDispatched(context.WithoutCancel(ctx), s.Ent, started)
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-webhookStarts; wg.Done() }()
			in := workflows.WebhookDeliveryInput{DeliveryID: d.ID, IntegrationID: d.IntegrationID, WebhookID: d.WebhookID, Type: d.Type,
				Attempt: d.Attempted}
			if d.Attempted > 0 {
				in.Delay = workflows.WebhookBackoff(d.ID, d.Attempted)
			}
			if err := workflows.StartWebhookDelivery(ctx, s.Client, s.TaskQueue, in); err != nil {
				s.Log.Warn("starting a webhook delivery; the re-drive will retry", "delivery", d.ID, "error", err)
				return
			}
			mu.Lock()
			started = append(started, d.ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := events.MarkDispatched(ctx, s.Ent, started); err != nil {
		s.Log.Warn("recording webhook starts", "error", err)
	}
}
