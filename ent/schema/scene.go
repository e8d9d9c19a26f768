package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// RemixedFrom records the source of a remix (a clone of another owner's public scene).
type RemixedFrom struct {
	SplatID   string `json:"splatId"`
	OwnerName string `json:"ownerName"`
	ClonedAt  string `json:"clonedAt"`
}

// Scene is a hosted Gaussian-splat scene (a "splat" in the interface).
type Scene struct{ ent.Schema }

// Mixin of the Scene.
func (Scene) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{}, TimeMixin{}, IntegrationMixin{Ref: "scenes"}}
}

// Fields of the Scene.
func (Scene) Fields() []ent.Field {
	return []ent.Field{
		field.String("owner_id").MaxLen(24).NotEmpty(),
		field.String("title").Validate(MaxRunes(200)),
		field.String("description").Validate(MaxRunes(2000)).Default(""),
		field.String("image_url").Default(""),
		field.String("thumbnail_depth_url").Optional().Nillable(),
		field.String("splat_url"),
		field.Enum("splat_type").Values("file", "lod").Default("file"),
		field.String("lod_folder_key").Optional().Nillable(),
		// lod_files is how many objects the LOD folder holds, known at commit (the upload
		// ticket's files), so a clone can count and reserve without listing the folder first.
		// Nil for single-file scenes and for LOD scenes committed before it was recorded.
		field.Int("lod_files").Optional().Nillable().NonNegative(),
		field.Enum("visibility").Values("private", "public").Default("private"),
		field.Bool("allow_embed").Default(true),
		field.Bool("allow_comments").Default(true),
		field.Bool("allow_reactions").Default(true),
		field.Bool("allow_clone").Default(false),
		field.JSON("remixed_from", &RemixedFrom{}).Optional(),
		field.JSON("level_data", map[string]any{}).Optional(),
		field.Floats("initial_camera_position").Optional(),
		field.Floats("initial_camera_rotation").Optional(),
		field.Int64("view_count").Default(0),
		field.Int64("like_count").Default(0),
		field.Int64("file_size_bytes").Default(0),
		field.Bool("featured").Default(false),
		field.Time("featured_at").Optional().Nillable(),
		// asset_keys lists every stored object of the scene (file or LOD tiles, thumbnails,
		// audio) so delete, clone and purge need no bucket listing.
		field.Strings("asset_keys").Optional(),
		// Clone bookkeeping: a clone holds no scene slot until its first publish, which then
		// consumes the slot permanently.
		field.String("cloned_from_id").Optional().Nillable().MaxLen(24),
		field.Bool("holds_splat_slot").Default(true),
		field.Time("first_published_at").Optional().Nillable(),
		// Retained archive (billing lifecycle): archived scenes are hidden, private,
		// non-embeddable and released from the storage and scene counters.
		field.Time("archived_at").Optional().Nillable(),
		field.Bool("archive_protected").Default(false),
		field.Enum("archived_prior_visibility").Values("private", "public").Optional().Nillable(),
		field.Bool("archived_prior_allow_embed").Optional().Nillable(),
		// Renditions (contract item 15): the delivery copy the media worker builds from the
		// upload. processing_state is also the outbox of the SceneRenditions workflow: the
		// media worker's dispatcher starts the workflow of every pending scene, paced and fair
		// between integrations (internal/worker/renditions_dispatch.go). Renditions are not
		// charged: fileSizeBytes is the upload's alone.
		field.Enum("processing_state").Values("pending", "ready", "failed", "skipped").Default("skipped"),
		// rendition_queue is the media task queue the scene service planned the rendition on
		// (its SPLATHOST_MEDIA_TASK_QUEUE): only that queue's dispatcher starts it, so two
		// deployments sharing a database (or a test's own split) do not take each other's.
		// NULL (scenes of before, clones) is any dispatcher's.
		field.String("rendition_queue").Optional().Nillable(),
		// rendition_started_at is when a dispatcher last started (or found running) the
		// scene's rendition workflow; NULL: not started yet. Pending scenes started recently
		// are the renditions in flight, which the dispatcher bounds.
		field.Time("rendition_started_at").Optional().Nillable(),
		// processing_message says why a rendition failed (or was skipped), for the owner.
		field.String("processing_message").Optional().Nillable().MaxLen(500),
		// rendition_prefix is the scene's own folder of rendition objects (the SOG, the LOD
		// folder, the poster), set when a rendition is planned so that delete and purge remove
		// it even when the conversion is still running.
		field.String("rendition_prefix").Optional().Nillable(),
		field.Enum("rendition_type").Values("sog", "lod").Optional().Nillable(),
		// rendition_key is the .sog object, or the lod-meta.json of a Streamed SOG folder.
		field.String("rendition_key").Optional().Nillable(),
		field.Int64("rendition_bytes").Optional().Nillable().NonNegative(),
		field.Int("rendition_files").Optional().Nillable().NonNegative(),
		field.Int64("gaussians").Optional().Nillable().NonNegative(),
	}
}

// Edges of the Scene.
func (Scene) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("owner", ExternalUser.Type).Ref("scenes").Field("owner_id").Unique().Required(),
	}
}

// Indexes of the Scene.
func (Scene) Indexes() []ent.Index {
	return []ent.Index{
		// List pages: (integration, sort key, id) keeps keyset pagination an index range scan.
		index.Fields("integration_id", "created_at", "id"),
		index.Fields("integration_id", "updated_at", "id"),
		index.Fields("integration_id", "view_count", "id"),
		index.Fields("integration_id", "featured", "featured_at", "id"),
		index.Fields("owner_id", "created_at", "id"),
		index.Fields("archived_at"),
		// The rendition re-drive scans pending scenes.
		index.Fields("processing_state", "updated_at"),
	}
}
