package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// RoomPresence is one participant of a multiplayer editor room (docs/embeds.md, "Multiplayer
// room"), written by the session service process that holds the participant's WebSocket. The
// process refreshes last_seen of all its rows every 5 s; a row not refreshed for 15 s belongs to
// a process that died and is ignored, then swept (with a leave announced) by any process. The
// table, not a process's memory, is the room's roster, so every process sees every participant.
type RoomPresence struct{ ent.Schema }

// Fields of the RoomPresence.
func (RoomPresence) Fields() []ent.Field {
	return []ent.Field{
		// id is the participant id the protocol shows (opaque; a fresh one per connection).
		field.String("id").MaxLen(24).NotEmpty().Immutable(),
		// room_key is "<integrationId>:<splatId>": one room per scene of an integration.
		field.String("room_key").MaxLen(64).NotEmpty().Immutable(),
		// process_id names the session service process holding the connection (random per
		// start), so a process refreshes and, at shutdown, deletes only its own rows.
		field.String("process_id").MaxLen(24).NotEmpty().Immutable(),
		// name is the shown name: the session's user.name cut to 32 characters, or "Guest N".
		field.String("name").NotEmpty().Immutable(),
		field.String("avatar_url").Optional().Nillable().Immutable(),
		field.String("colour").MaxLen(7).NotEmpty().Immutable(),
		field.Bool("guest").Immutable(),
		// guest_number is N of "Guest N" (0 for a named participant): the lowest positive
		// number no live guest of the room holds when this one joined.
		field.Int("guest_number").Default(0).Immutable(),
		// holder is the session or visitor the socket counts against (at most
		// roomproto.PerHolder sockets each, across every room and process): a guest session's
		// anonymous id, or a scoped session's customer.
		field.String("holder").Default("").Immutable(),
		// can_edit says the participant holds an editor's seat (the scene's owner, or the
		// scene's coEdit session): a full room evicts its newest guest to seat one.
		field.Bool("can_edit").Default(false).Immutable(),
		field.Time("joined_at").Default(time.Now).Immutable(),
		field.Time("last_seen").Default(time.Now),
	}
}

// Indexes of the RoomPresence.
func (RoomPresence) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("room_key"),
		index.Fields("process_id"),
		// The sweep looks for rows not refreshed for 15 s.
		index.Fields("last_seen"),
		// A join counts its holder's sockets.
		index.Fields("holder"),
	}
}
