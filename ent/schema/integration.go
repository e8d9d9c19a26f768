package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Integration is a reseller's credential pair and product boundary. Only a SHA-256 hash of the
// secret key is stored: the key is 256 random bits, so a slow hash adds nothing but latency.
type Integration struct{ ent.Schema }

// Mixin of the Integration.
func (Integration) Mixin() []ent.Mixin { return []ent.Mixin{IDMixin{}, TimeMixin{}} }

// Fields of the Integration.
func (Integration) Fields() []ent.Field {
	return []ent.Field{
		field.String("account_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("product_slug").NotEmpty().Validate(MaxRunes(253)),
		field.Strings("capabilities"),
		field.Bool("rest_access").Default(true),
		field.String("public_key").NotEmpty().Unique().Immutable(),
		field.Bytes("secret_hash").NotEmpty().Sensitive(),
		// frame_ancestors restricts which origins may frame the embeds; empty means any.
		field.Strings("frame_ancestors").Optional(),
		field.Time("revoked_at").Optional().Nillable(),
	}
}

// Edges of the Integration.
func (Integration) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("account", Account.Type).Ref("integrations").Field("account_id").Unique().Required().Immutable(),
		edge.To("external_users", ExternalUser.Type),
		edge.To("scenes", Scene.Type),
		edge.To("upload_tickets", UploadTicket.Type),
	}
}

// Indexes of the Integration.
func (Integration) Indexes() []ent.Index {
	return []ent.Index{
		// Secret-bearer calls (embed-session minting) look an integration up by the secret alone.
		index.Fields("secret_hash").Unique(),
	}
}
