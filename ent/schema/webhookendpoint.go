package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// WebhookEndpoint is one receiver an integration registered (contract item 12): the URL events
// are POSTed to, the event types it wants (empty: all) and its signing secret. The secret is
// stored sealed with the deployment's webhook key (AES-256-GCM, internal/events.Sealer), never
// in clear: signing needs the secret itself, so a hash would not do, and a database dump alone
// does not let anyone forge deliveries. After a rotation the previous secret keeps signing
// until previous_expires_at (24 h), so receivers can switch without losing a delivery.
// A deleted endpoint keeps its row (deleted_at) so its delivery log stays readable by the
// workflows still running; it receives nothing more.
type WebhookEndpoint struct{ ent.Schema }

// Mixin of the WebhookEndpoint.
func (WebhookEndpoint) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{}, TimeMixin{}, IntegrationMixin{}}
}

// Fields of the WebhookEndpoint.
func (WebhookEndpoint) Fields() []ent.Field {
	return []ent.Field{
		field.String("url").MaxLen(2048).NotEmpty().Immutable(),
		field.Strings("events").Optional(),
		field.String("description").MaxLen(500).Default(""),
		field.Bytes("secret_sealed").Sensitive(),
		field.Bytes("previous_secret_sealed").Optional().Nillable().Sensitive(),
		field.Time("previous_expires_at").Optional().Nillable(),
		field.Time("deleted_at").Optional().Nillable(),
	}
}

// Indexes of the WebhookEndpoint.
func (WebhookEndpoint) Indexes() []ent.Index {
	return []ent.Index{
		// Every scene change looks up the integration's live endpoints.
		index.Fields("integration_id", "deleted_at"),
	}
}
