package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/index"
)

// SceneLike is one visitor's like of a scene, from the viewer embed. The unique index makes a
// like idempotent (one per visitor and scene); scenes.like_count is raised in the same
// transaction as the insert. No foreign key: the rows of a deleted scene go with its view
// records (the DeleteSceneViews activity).
type SceneLike struct{ ent.Schema }

// Mixin of the SceneLike: a like is its visitor, its scene and when, nothing more.
func (SceneLike) Mixin() []ent.Mixin {
	return []ent.Mixin{SerialIDMixin{}, SceneVisitorMixin{}, CreatedAtMixin{}}
}

// Indexes of the SceneLike.
func (SceneLike) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("scene_id", "visitor_id").Unique(),
	}
}
