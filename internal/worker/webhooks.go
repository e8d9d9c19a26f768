package worker

import (
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/internal/webhooks"
	"github.com/splathost/splathost/internal/webhookstart"
)

// activityEvents is the outbox of the activities' own changes: scene items rendered as the
// scene service renders them (asset-route URLs of this deployment).
func activityEvents(c client.Client, cfg config.Config, e *ent.Client, log *slog.Logger, settings *webhooks.Settings) *events.Outbox {
	return &events.Outbox{Starter: webhookstart.Dispatcher(c, cfg, e, log, settings),
		Render: scenes.WebhookRenderer(scenes.NewAssetURLs(cfg)), Log: log}
}
