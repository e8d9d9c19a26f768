package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// SceneLike is one visitor's like of a scene, from the viewer embed. The unique index makes a
// like idempotent (one per visitor and scene); scenes.like_count is raised in the same
// transaction as the insert. No foreign key: the rows of a deleted scene go with its view
// records (the DeleteSceneViews activity).
type SceneLike struct{ ent.Schema }

// Fields of the SceneLike.
func (SceneLike) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("id"),
		field.String("integration_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("scene_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("visitor_id").NotEmpty().Immutable(),
		field.Time("created_at").Default(time.Now).Immutable(),
	}
}

// Indexes of the SceneLike.
func (SceneLike) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("scene_id", "visitor_id").Unique(),
	}
}
