// Package webhookstart wires a process's webhook deliveries to Temporal: the dispatcher whose
// direct first attempt is webhooks.Attempts.Attempt (the workflow activity's own code path), the
// hand-off of what it does not settle to a WebhookDelivery workflow, and the registry settings of
// the user service. The service binaries take their starter from here without linking the worker,
// the activities or media.
package webhookstart

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/webhooks"
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

// Starter is the events.Starter of a process that writes events (the services, the
// worker, the media worker): each delivery's first attempt is made at once by the process
// itself, and what it does not settle goes to a WebhookDelivery workflow on the API worker's
// task queue.
func Starter(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger) (*events.Dispatcher, error) {
	settings, err := Settings(c, cfg)
	if err != nil {
		return nil, err
	}
	return Dispatcher(c, cfg, e, log, settings), nil
}

// Dispatcher is the events.Dispatcher of a process under cfg: each delivery's first attempt at
// once, what it does not settle handed to a WebhookDelivery workflow.
func Dispatcher(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger, settings *webhooks.Settings) *events.Dispatcher {
	// The attempt is the workflow activity's own (webhooks.Attempts): one code path for every
	// attempt, whoever makes it.
	acts := &webhooks.Attempts{Ent: e, Settings: settings, Log: log}
	attempt := func(ctx context.Context, d events.Delivery) (events.AttemptOutcome, error) {
		out, err := acts.Attempt(ctx, contract.AttemptWebhookInput{
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
		HandOff:     &HandOff{Client: c, TaskQueue: cfg.TaskQueue, Ent: e, Log: log},
		PerEndpoint: max(cfg.WebhookConcurrency, 1),
		// At most half the workers per integration, so one integration's slow receivers never
		// hold them all.
		PerIntegration: max(min(cfg.WebhookIntegrationConcurrency, webhookDirectWorkers/2), 1),
		Workers:        webhookDirectWorkers,
		MaxWait:        webhookDirectMaxWait,
		MaxQueued:      webhookDirectMaxQueued,
		Log:            log,
	}
}

// Settings are the delivery settings of cfg; a freed slot wakes a waiting delivery through c.
func Settings(c client.Client, cfg config.Config) (*webhooks.Settings, error) {
	sealer, err := events.NewSealer(cfg.WebhookSealKey())
	if err != nil {
		return nil, err
	}
	wake := func(ctx context.Context, deliveryID string) error {
		return c.SignalWorkflow(ctx, workflows.WebhookDeliveryID(deliveryID), "", workflows.WebhookSlotSignal, nil)
	}
	return &webhooks.Settings{Sealer: sealer, Client: events.Client(cfg.WebhookAllowPrivate),
		Concurrency: cfg.WebhookConcurrency, IntegrationConcurrency: cfg.WebhookIntegrationConcurrency, Wake: wake}, nil
}

// Registry are the endpoint registry's settings (the user service's) under cfg, with the
// process's starter.
func Registry(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger) (webhooks.Registry, error) {
	settings, err := Settings(c, cfg)
	if err != nil {
		return webhooks.Registry{}, err
	}
	return webhooks.Registry{Sealer: settings.Sealer, AllowPrivate: cfg.WebhookAllowPrivate,
		Starter: Dispatcher(c, cfg, e, log, settings)}, nil
}
