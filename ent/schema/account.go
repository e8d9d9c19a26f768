package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
)

// Account is the billed party: an integrator's company. Its storage meter and scene count are
// the aggregate of all its customers' live scenes; quota checks lock this row.
type Account struct{ ent.Schema }

// Mixin of the Account.
func (Account) Mixin() []ent.Mixin { return []ent.Mixin{IDMixin{}, TimeMixin{}} }

// Fields of the Account.
func (Account) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().Validate(MaxRunes(200)),
		field.Enum("plan").Values("free", "pro", "enterprise"),
		field.Int64("storage_bundle_bytes").Min(0),
		// max_splats is the account-level scene cap; NULL means no cap.
		field.Int64("max_splats").Optional().Nillable().Min(0),
		// overage lets usage exceed the bundle (enterprise only): the account-scope storage
		// check never fires while it is on.
		field.Bool("overage").Default(false),
		// used_bytes is the account storage meter: bytes of every live, non-archived scene.
		field.Int64("used_bytes").Default(0),
		// splat_count counts scenes that hold an account scene slot (published clones and all
		// non-clone live scenes).
		field.Int64("splat_count").Default(0),
	}
}

// Edges of the Account.
func (Account) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("integrations", Integration.Type),
	}
}
