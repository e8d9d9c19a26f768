package activities

import (
	"context"
	"errors"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/webhookdelivery"
	"github.com/splathost/splathost/internal/webhooks"
	"github.com/splathost/splathost/workflows/contract"
)

// AttemptWebhookDelivery POSTs a delivery to its endpoint once and records the outcome on the
// delivery row: webhooks.Attempts.Attempt, the one attempt a writer's direct first attempt
// makes too. An attempt that can never succeed fails for good (contract.ErrBadInput).
func (a *Activities) AttemptWebhookDelivery(ctx context.Context, in contract.AttemptWebhookInput) (contract.AttemptWebhookResult, error) {
	out, err := (&webhooks.Attempts{Ent: a.Ent, Settings: a.Webhooks, Log: a.Log}).Attempt(ctx, in)
	if inv := (*webhooks.InvalidError)(nil); errors.As(err, &inv) {
		return out, badInput("%s", inv.Reason)
	}
	return out, err
}

// PendingWebhookDeliveries lists pending deliveries without a started workflow, older than
// MinAge (a fresh row is its writer's to start, right after its commit).
func (a *Activities) PendingWebhookDeliveries(ctx context.Context, in contract.PendingWebhooksInput) (contract.PendingWebhooksResult, error) {
	rows, err := a.Ent.WebhookDelivery.Query().
		Where(webhookdelivery.StateEQ(webhookdelivery.StatePending), webhookdelivery.DispatchedAtIsNil(),
			webhookdelivery.UpdatedAtLT(time.Now().Add(-in.MinAge))).
		Order(ent.Asc(webhookdelivery.FieldCreatedAt)).Limit(in.Limit).
		Select(webhookdelivery.FieldID, webhookdelivery.FieldIntegrationID, webhookdelivery.FieldEndpointID, webhookdelivery.FieldType).
		All(ctx)
	if err != nil {
		return contract.PendingWebhooksResult{}, err
	}
	out := contract.PendingWebhooksResult{Deliveries: make([]contract.PendingWebhook, len(rows))}
	for i, r := range rows {
		out.Deliveries[i] = contract.PendingWebhook{DeliveryID: r.ID, IntegrationID: r.IntegrationID, WebhookID: r.EndpointID, Type: r.Type}
	}
	return out, nil
}
