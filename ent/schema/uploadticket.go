package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// UploadObject is one object a ticket allows to be uploaded.
type UploadObject struct {
	Key          string `json:"key"`
	RelativePath string `json:"relativePath,omitempty"`
	ContentType  string `json:"contentType"`
	Size         int64  `json:"size"`
}

// UploadTicket records signed upload URLs handed out, so a commit can prove the objects were
// issued to the same customer and the orphan sweep can delete what was never committed.
type UploadTicket struct{ ent.Schema }

// Mixin of the UploadTicket.
func (UploadTicket) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{}, TimeMixin{}, IntegrationMixin{Ref: "upload_tickets"}}
}

// Fields of the UploadTicket.
func (UploadTicket) Fields() []ent.Field {
	return []ent.Field{
		field.String("owner_id").MaxLen(24).NotEmpty().Immutable(),
		field.Enum("kind").Values("splat_file", "lod_folder", "splat_images", "audio").Immutable(),
		// prefix is the unique key prefix every object of the ticket lives under.
		field.String("prefix").NotEmpty().Unique().Immutable(),
		field.JSON("objects", []UploadObject{}).Immutable(),
		field.Int64("total_bytes").Min(0).Immutable(),
		field.Time("expires_at").Immutable(),
		field.Time("committed_at").Optional().Nillable(),
		field.String("scene_id").Optional().Nillable().MaxLen(24),
		// multipart_upload_id is the object store's id of a resumable (multipart) splat-file
		// upload. It never leaves the service: clients name the upload by the ticket id, which
		// is scoped to their integration and customer, while S3's id is not.
		field.String("multipart_upload_id").Optional().Nillable().Immutable().Sensitive(),
		// part_size is the size of every part of a multipart upload but the last (smaller) one.
		field.Int64("part_size").Optional().Min(0).Immutable(),
		// multipart_completed_at is when the multipart upload became one object; a commit
		// refuses the ticket before.
		field.Time("multipart_completed_at").Optional().Nillable(),
		// session_id is the embed session (sessiontoken.SessionID) that asked for the ticket, nil
		// for an integration's own keys: an editor session may hold only a few open tickets
		// (quota.MaxOpenUploadsPerSession), whoever its customer is.
		field.String("session_id").Optional().Nillable().Immutable().MaxLen(64),
	}
}

// Edges of the UploadTicket.
func (UploadTicket) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("owner", ExternalUser.Type).Ref("upload_tickets").Field("owner_id").Unique().Required().Immutable(),
	}
}

// Indexes of the UploadTicket.
func (UploadTicket) Indexes() []ent.Index {
	return []ent.Index{
		// The orphan sweep scans uncommitted tickets past their window.
		index.Fields("committed_at", "expires_at"),
		// The bound on open tickets (quota.AdmitUpload) counts a customer's open tickets under the
		// customer's row lock at every upload request.
		index.Fields("owner_id", "expires_at"),
	}
}
