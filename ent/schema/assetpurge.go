package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// AssetPurge is the transactional outbox of stored objects to remove: the row is written in the
// same transaction that makes the objects unneeded, so they are never forgotten, even when the
// process dies between the commit and the start of the purge workflow. Three kinds: a customer
// deletion (the customer's scenes, PurgeCustomerAssets), a scene DELETE (the scene's objects and
// view records, PurgeAssets) and a commit refused for quota (the uploads it named, PurgeAssets,
// which first claims the uploads that are still uncommitted and keeps any another commit took).
// The service starts the workflow right after the commit; the purge re-drive restarts any row
// not yet closed; the workflow closes the row when every object is gone. Closed rows stay as the
// audit trail of what a deletion removed.
type AssetPurge struct{ ent.Schema }

// Mixin of the AssetPurge.
func (AssetPurge) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{}, TimeMixin{}, IntegrationMixin{}}
}

// Fields of the AssetPurge.
func (AssetPurge) Fields() []ent.Field {
	return []ent.Field{
		// kind says which workflow runs the row and what it does before deleting (see above).
		field.Enum("kind").Values("customer", "scene", "upload").Default("customer").Immutable(),
		// owner_id and external_user_id name the deleted customer, or the owner of the scene or
		// uploads (its record id, as in scenes.owner_id, and the integrator's id); the
		// customer purge's workflow id and every purge's search attributes come from them. No
		// foreign keys: the outbox must never block or be blocked by the rows it outlives.
		field.String("owner_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("external_user_id").NotEmpty().Immutable(),
		// keys are single objects to delete; prefixes are folders (LOD scenes) to list and empty.
		// An upload purge fills them in when it claims its uploads (prepared_at).
		field.Strings("keys").Optional(),
		field.Strings("prefixes").Optional(),
		// scene_id is the deleted scene of a scene purge, whose view records go too.
		field.String("scene_id").Optional().Nillable().MaxLen(24).Immutable(),
		// ticket_ids are the upload tickets of an upload purge: only those still uncommitted when
		// the purge runs are claimed (their rows deleted, so no commit can take them afterwards)
		// and their objects removed.
		field.Strings("ticket_ids").Optional().Immutable(),
		// prepared_at records that an upload purge has claimed its uploads and fixed keys and
		// prefixes; a re-run does not claim again.
		field.Time("prepared_at").Optional().Nillable(),
		field.Int("scene_count").Default(0).Immutable(),
		// done_at closes the row: every object is gone (or, with failure set, the purge gave up
		// on input it can never process).
		field.Time("done_at").Optional().Nillable(),
		field.Int("deleted_objects").Default(0),
		field.String("failure").Optional().Nillable(),
		// redriven_at is when the re-drive last offered the row: each run takes the open rows
		// offered least recently (never first), so rows whose purges are running for long (a
		// ClickHouse outage) never keep a row whose start was lost from being re-driven.
		field.Time("redriven_at").Optional().Nillable(),
	}
}

// Indexes of the AssetPurge.
func (AssetPurge) Indexes() []ent.Index {
	return []ent.Index{
		// The re-drive scans open rows, oldest first.
		index.Fields("done_at", "created_at"),
	}
}
