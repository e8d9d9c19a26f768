package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// AssetPurge is the transactional outbox of a customer deletion: the row is written in the same
// transaction that removes the customer's scenes, so the objects still to be removed from the
// store are never forgotten, even when the process dies between the commit and the start of the
// PurgeCustomerAssets workflow. The service starts the workflow right after the commit; the
// purge re-drive restarts any row not yet closed; the workflow closes the row when every object
// is gone. Closed rows stay as the audit trail of what a deletion removed.
type AssetPurge struct{ ent.Schema }

// Mixin of the AssetPurge.
func (AssetPurge) Mixin() []ent.Mixin { return []ent.Mixin{IDMixin{}, TimeMixin{}} }

// Fields of the AssetPurge.
func (AssetPurge) Fields() []ent.Field {
	return []ent.Field{
		field.String("integration_id").MaxLen(24).NotEmpty().Immutable(),
		// external_user_record_id and external_user_id name the deleted customer (its record id
		// and the integrator's id); the workflow id and search attributes come from them. No
		// foreign keys: the outbox must never block or be blocked by the rows it outlives.
		field.String("external_user_record_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("external_user_id").NotEmpty().Immutable(),
		// keys are single objects to delete; prefixes are folders (LOD scenes) to list and empty.
		field.Strings("keys").Optional().Immutable(),
		field.Strings("prefixes").Optional().Immutable(),
		field.Int("scene_count").Default(0).Immutable(),
		// done_at closes the row: every object is gone (or, with failure set, the purge gave up
		// on input it can never process).
		field.Time("done_at").Optional().Nillable(),
		field.Int("deleted_objects").Default(0),
		field.String("failure").Optional().Nillable(),
	}
}

// Indexes of the AssetPurge.
func (AssetPurge) Indexes() []ent.Index {
	return []ent.Index{
		// The re-drive scans open rows, oldest first.
		index.Fields("done_at", "created_at"),
	}
}
