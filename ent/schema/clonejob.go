package schema

import (
	"encoding/json"

	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// CloneDraft is the scene a clone job will create, fixed when the job reserves its storage: the
// source's record as it was then, with every asset URL already pointing at the copies. The
// scene is created from it when the copy is complete, so edits or a deletion of the source
// while the copy runs cannot produce a half-updated clone.
type CloneDraft struct {
	Title                 string         `json:"title"`
	Description           string         `json:"description"`
	SplatType             string         `json:"splatType"`
	SplatURL              string         `json:"splatUrl"`
	LodFolderKey          *string        `json:"lodFolderKey,omitempty"`
	LodFiles              *int           `json:"lodFiles,omitempty"`
	ImageURL              string         `json:"imageUrl"`
	ThumbnailDepthURL     *string        `json:"thumbnailDepthUrl,omitempty"`
	InitialCameraPosition []float64      `json:"initialCameraPosition,omitempty"`
	InitialCameraRotation []float64      `json:"initialCameraRotation,omitempty"`
	LevelData             map[string]any `json:"levelData,omitempty"`
	AllowEmbed            bool           `json:"allowEmbed"`
	AllowComments         bool           `json:"allowComments"`
	AllowReactions        bool           `json:"allowReactions"`
	RemixedFrom           *RemixedFrom   `json:"remixedFrom,omitempty"`
	// AssetKeys are the single objects of the clone (file, images, levelData assets).
	AssetKeys []string `json:"assetKeys,omitempty"`
	// Rendition says the clone gets its own rendition: the source has (or is building) one.
	Rendition bool `json:"rendition,omitempty"`
}

// CloneJob is a clone in progress: it holds the storage the clone reserved from its customer
// and account (spec: storage is charged at clone time) and the draft of the scene it will
// create. Its id is the id the new scene will get. The row exists exactly while the
// reservation does: the job's final step replaces it with the scene in one transaction (the
// bytes stay charged, now to the scene), and a rollback deletes it and releases the bytes in
// one transaction — so a retried step can tell whether it already ran.
type CloneJob struct{ ent.Schema }

// Mixin of the CloneJob.
func (CloneJob) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{}, TimeMixin{}, IntegrationMixin{}}
}

// Fields of the CloneJob.
func (CloneJob) Fields() []ent.Field {
	return []ent.Field{
		// No foreign keys: a customer deletion removes its jobs' rows itself (releasing their
		// bytes with the customer's), and the job then finds its row gone and rolls back.
		field.String("owner_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("account_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("source_splat_id").MaxLen(24).NotEmpty().Immutable(),
		field.Int64("bytes").NonNegative().Immutable(),
		field.Int("total_objects").NonNegative().Immutable(),
		field.JSON("draft", &CloneDraft{}).Immutable(),
		// The copy plan, as the clone activities wrote it (the workflow contract's ClonePlan in
		// its JSON): the row only keeps it for a retried PrepareClone to answer with, so the
		// schema needs no type of the workflows' (ent stays below them).
		field.JSON("plan", json.RawMessage{}).Immutable(),
	}
}

// Indexes of the CloneJob.
func (CloneJob) Indexes() []ent.Index {
	return []ent.Index{
		// The customer deletion finds its customer's jobs.
		index.Fields("owner_id"),
	}
}
