package worker

import (
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/webhooks"
	"github.com/splathost/splathost/internal/webhookstart"
	"github.com/splathost/splathost/services/scene"
)

// activityEvents is the outbox of the activities' own changes: scene items rendered as the
// scene service renders them (asset-route URLs of this deployment).
func activityEvents(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger, settings *webhooks.Settings) *events.Outbox {
	return &events.Outbox{Starter: webhookstart.Dispatcher(c, cfg, e, log, settings),
		Render: scene.WebhookRenderer(scene.NewAssetURLs(cfg)), Log: log}
}
