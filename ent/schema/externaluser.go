package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// ExternalUser is a customer the integration provisions, keyed by the integrator's own id.
type ExternalUser struct{ ent.Schema }

// Mixin of the ExternalUser.
func (ExternalUser) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{}, TimeMixin{}, IntegrationMixin{Ref: "external_users"}}
}

// Fields of the ExternalUser.
func (ExternalUser) Fields() []ent.Field {
	return []ent.Field{
		field.String("external_user_id").NotEmpty().Validate(MaxRunes(256)).Immutable(),
		field.String("display_name").Optional().Nillable().Validate(MaxRunes(120)),
		field.String("avatar_url").Optional().Nillable().Validate(MaxRunes(2048)),
		field.String("email_hash").Optional().Nillable().Validate(MaxRunes(128)),
		field.JSON("metadata", map[string]any{}).Optional(),
		field.Enum("status").Values("active", "inactive", "deleted").Default("active"),
		field.Enum("billing_state").Values("active", "suspended", "canceled").Default("active"),
		// billing_state_changed_at anchors the retention timers of the billing lifecycle.
		field.Time("billing_state_changed_at").Optional().Nillable(),
		field.Int64("used_bytes").Default(0),
		field.Int64("limit_bytes").Min(0),
		field.Int64("max_splats").Optional().Nillable().Min(0),
		// splat_count is the live count of scenes holding a customer scene slot, kept in the
		// same transaction as the scene rows so cap checks need only this row's lock.
		field.Int64("splat_count").Default(0),
		field.Time("deleted_at").Optional().Nillable(),
	}
}

// Edges of the ExternalUser.
func (ExternalUser) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("scenes", Scene.Type),
		edge.To("upload_tickets", UploadTicket.Type),
	}
}

// Indexes of the ExternalUser.
func (ExternalUser) Indexes() []ent.Index {
	return []ent.Index{
		// One record per integration + external user id; concurrent upserts rely on it.
		index.Fields("integration_id", "external_user_id").Unique(),
	}
}
