package worker

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/services/scene"
	"github.com/splathost/splathost/services/user"
	"github.com/splathost/splathost/workflows"
)

// WebhookStarter starts webhook deliveries on the API worker's task queue, for every process
// that writes events (services, the worker, the media worker).
func WebhookStarter(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger) *workflows.WebhookStarter {
	return &workflows.WebhookStarter{Client: c, TaskQueue: cfg.TaskQueue, Ent: e, Log: log}
}

// activityEvents is the outbox of the activities' own changes: scene items rendered as the
// scene service renders them (asset-route URLs of this deployment).
func activityEvents(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger) *events.Outbox {
	return &events.Outbox{Starter: WebhookStarter(c, cfg, e, log), Render: scene.WebhookRenderer(scene.NewAssetURLs(cfg)), Log: log}
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
	sealer, err := events.NewSealer(cfg.WebhookSealKey())
	if err != nil {
		return user.Webhooks{}, err
	}
	return user.Webhooks{Sealer: sealer, AllowPrivate: cfg.WebhookAllowPrivate, Starter: WebhookStarter(c, cfg, e, log)}, nil
}
