package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/schema/field"
)

// RoomDraft is a multiplayer room's unsaved changes: the merge of every edit since the last
// save (last writer wins per top-level field; levelData per top-level levelData key), and seq,
// raised by every edit and save, so a participant that joins or reconnects starts from the
// draft and applies only the edits after it. Edits merge inside Postgres (one UPDATE), so two
// processes editing one room never lose each other's fields.
type RoomDraft struct{ ent.Schema }

// Fields of the RoomDraft.
func (RoomDraft) Fields() []ent.Field {
	return []ent.Field{
		// id is the room key, "<integrationId>:<splatId>".
		field.String("id").MaxLen(64).NotEmpty().Immutable(),
		field.JSON("fields", map[string]any{}),
		field.Int64("seq").Default(0),
		field.Time("updated_at").Default(time.Now).UpdateDefault(time.Now),
	}
}
