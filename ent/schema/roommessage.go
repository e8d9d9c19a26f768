package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// RoomMessage carries a multiplayer room event too large for a NOTIFY payload (Postgres
// refuses payloads of 8000 bytes or more): the event is stored here and only its id is
// notified, in the same transaction, so every listener can read it once the NOTIFY arrives.
// Rows are swept a minute after they were written; every listener has read them by then.
type RoomMessage struct{ ent.Schema }

// Mixin of the RoomMessage: the id Postgres assigns is what the NOTIFY carries.
func (RoomMessage) Mixin() []ent.Mixin { return []ent.Mixin{SerialIDMixin{}} }

// Fields of the RoomMessage.
func (RoomMessage) Fields() []ent.Field {
	return []ent.Field{
		field.Text("payload").Immutable(),
		field.Time("created_at").Default(time.Now).Immutable(),
	}
}

// Indexes of the RoomMessage.
func (RoomMessage) Indexes() []ent.Index {
	return []ent.Index{index.Fields("created_at")}
}
