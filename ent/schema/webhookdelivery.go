package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// WebhookDelivery is the transactional outbox of webhook events and their delivery log: one row
// per event and matching endpoint, written in the same transaction as the change that causes
// the event (internal/events.Outbox), so a crash never loses an event nor sends one for a change
// that rolled back. Its id is the webhook-id header (the same on every retry) and the business
// key of its WebhookDelivery workflow (webhook-delivery/<id>). payload is the exact body sent,
// fixed at the change, so every attempt signs the same bytes. dispatched_at records that the
// workflow was started; the webhook re-drive starts rows still pending without it.
type WebhookDelivery struct{ ent.Schema }

// Mixin of the WebhookDelivery.
func (WebhookDelivery) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{}, TimeMixin{}, IntegrationMixin{}}
}

// Fields of the WebhookDelivery.
func (WebhookDelivery) Fields() []ent.Field {
	return []ent.Field{
		// No foreign keys: the outbox must never block, or be blocked by, the rows it outlives.
		field.String("endpoint_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("type").MaxLen(64).NotEmpty().Immutable(),
		field.Text("payload").NotEmpty().Immutable(),
		field.Enum("state").Values("pending", "succeeded", "failed").Default("pending"),
		field.Int("attempts").Default(0),
		field.Int("last_status_code").Optional().Nillable(),
		// last_error says why the last attempt failed without a status (refused target,
		// timeout); it never holds the secret or the body.
		field.String("last_error").MaxLen(500).Optional().Nillable(),
		field.Time("next_attempt_at").Optional().Nillable(),
		field.Time("dispatched_at").Optional().Nillable(),
		field.Time("delivered_at").Optional().Nillable(),
	}
}

// Indexes of the WebhookDelivery.
func (WebhookDelivery) Indexes() []ent.Index {
	return []ent.Index{
		// The delivery log of an endpoint, newest first, keyset-paginated on (created_at, id).
		index.Fields("endpoint_id", "created_at", "id"),
		// The re-drive scans pending rows without a workflow, oldest first.
		index.Fields("state", "dispatched_at", "created_at"),
	}
}
