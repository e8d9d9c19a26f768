package worker

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/services/user"
	"github.com/splathost/splathost/workflows"
	"github.com/splathost/splathost/workflows/contract"
)

// Bounds of a process's direct webhook attempts (events.Dispatcher).
const (
	// webhookDirectWorkers bounds the attempts in flight per process: each holds a database
	// connection (its endpoint slot's transaction) while the receiver answers, and the pool
	// (at least 16) also serves the process's own requests.
	webhookDirectWorkers = 8
	// webhookDirectMaxWait stays below the re-drive's minimum age (30 s), so the re-drive never
	// starts a workflow for a delivery a dispatcher still holds.
	webhookDirectMaxWait = 20 * time.Second
	// webhookDirectMaxQueued bounds the deliveries a process holds in memory.
	webhookDirectMaxQueued = 20000
)

// WebhookStarter is the events.Starter of a process that writes events (the services, the
// worker, the media worker): each delivery's first attempt is made at once by the process
// itself, and what it does not settle goes to a WebhookDelivery workflow on the API worker's
// task queue.
func WebhookStarter(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger) (*events.Dispatcher, error) {
	settings, err := webhookSettings(c, cfg)
	if err != nil {
		return nil, err
	}
	return webhookDispatcher(c, cfg, e, log, settings), nil
}

func webhookDispatcher(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger, settings *activities.WebhookSettings) *events.Dispatcher {
	// The attempt is the workflow's activity called as a function: one code path for every
	// attempt, whoever makes it.
	acts := &activities.Activities{Ent: e, Webhooks: settings, Log: log}
	attempt := func(ctx context.Context, d events.Delivery) (events.AttemptOutcome, error) {
		out, err := acts.AttemptWebhookDelivery(ctx, contract.AttemptWebhookInput{
			DeliveryID: d.ID, RetryIn: workflows.WebhookBackoff(d.ID, 1), Direct: true})
		switch {
		case err != nil:
			return 0, err
		case out.Outcome == contract.WebhookBusy:
			return events.AttemptBusy, nil
		case out.Outcome == contract.WebhookRetry:
			return events.AttemptRetry, nil
		}
		return events.AttemptClosed, nil
	}
	return &events.Dispatcher{
		Attempt:     attempt,
		HandOff:     &WebhookHandOff{Client: c, TaskQueue: cfg.TaskQueue, Ent: e, Log: log},
		PerEndpoint: max(cfg.WebhookConcurrency, 1),
		Workers:     webhookDirectWorkers,
		MaxWait:     webhookDirectMaxWait,
		MaxQueued:   webhookDirectMaxQueued,
		Log:         log,
	}
}

// activityEvents is the outbox of the activities' own changes: scene items rendered as the
// scene service renders them (asset-route URLs of this deployment).
func activityEvents(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger, settings *activities.WebhookSettings) *events.Outbox {
	return &events.Outbox{Starter: webhookDispatcher(c, cfg, e, log, settings),
		Render: scenes.WebhookRenderer(scenes.NewAssetURLs(cfg)), Log: log}
}

// webhookSettings are the delivery settings of cfg; a freed slot wakes a waiting delivery
// through c.
func webhookSettings(c client.Client, cfg config.Config) (*activities.WebhookSettings, error) {
	sealer, err := events.NewSealer(cfg.WebhookSealKey())
	if err != nil {
		return nil, err
	}
	wake := func(ctx context.Context, deliveryID string) error {
		return c.SignalWorkflow(ctx, workflows.WebhookDeliveryID(deliveryID), "", workflows.WebhookSlotSignal, nil)
	}
	return &activities.WebhookSettings{Sealer: sealer, Client: events.Client(cfg.WebhookAllowPrivate),
		Concurrency: cfg.WebhookConcurrency, Wake: wake}, nil
}

// UserWebhooks are the endpoint registry's settings of the user service under cfg.
func UserWebhooks(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger) (user.Webhooks, error) {
	settings, err := webhookSettings(c, cfg)
	if err != nil {
		return user.Webhooks{}, err
	}
	return user.Webhooks{Sealer: settings.Sealer, AllowPrivate: cfg.WebhookAllowPrivate,
		Starter: webhookDispatcher(c, cfg, e, log, settings)}, nil
}
