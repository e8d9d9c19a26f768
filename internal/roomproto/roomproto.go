// Package roomproto holds what the multiplayer room shows beyond the session service that runs
// it (docs/embeds.md, "Multiplayer room"): its route, which the gateway tunnels, the limits a
// client meets, which the benchmark fills rooms up to, and the statement with which the scene
// service tells a room that its scene was saved (the room never takes a client's word for it).
package roomproto

// Path is the multiplayer room's WebSocket route: GET
// /api/embed/room?splatId=<id>&session=<session token>. The gateway authenticates the token in
// the URL (a browser cannot set Authorization on a WebSocket) and hands the upgrade to the
// session service.
const Path = "/api/embed/room"

// Limits of the room (contract item 10 and the decisions of issue 13).
const (
	// Capacity is the most participants one room admits; the next guest gets 4409. A
	// participant with an editor's seat (the scene's owner, or the scene's coEdit session) is
	// seated by evicting the room's newest guest (4001).
	Capacity = 32
	// PerHolder is the most sockets one session (a guest's) or one visitor (a scoped session's
	// customer) holds at once, across every room and process; the next gets 4429.
	PerHolder = 4
	// MaxMessage is the largest client message; a larger one gets an error frame and 1009.
	MaxMessage = 64 << 10
	// Rate and Burst are each connection's token bucket: 30 messages a second sustained, 60 at
	// once; a client that exceeds it is closed with 4429.
	Rate  = 30
	Burst = 60
)

// Channel is the Postgres NOTIFY channel every room event travels on, between every session
// service process (docs/embeds.md, "Multiplayer room": why LISTEN/NOTIFY).
const Channel = "splathost_room"

// Key is the room of the integration's scene: one room per (integration, scene).
func Key(integrationID, sceneID string) string { return integrationID + ":" + sceneID }

// sceneSaved clears the draft of the scene's room when the room has one or anyone in it (a room
// nobody was ever in gets no row) and announces the save with the draft's new seq: $1 the
// channel, $2 the room, $3 the scene. The session service processes read the saved scene and send
// it to their participants as {type:'saved'}.
const sceneSaved = `WITH d AS (
	INSERT INTO room_drafts AS d (id, fields, seq, updated_at)
	SELECT $2::text, '{}'::jsonb, 1, now()
	WHERE EXISTS (SELECT 1 FROM room_presences WHERE room_key = $2::text) OR EXISTS (SELECT 1 FROM room_drafts WHERE id = $2::text)
	ON CONFLICT (id) DO UPDATE SET fields = '{}'::jsonb, seq = d.seq + 1, updated_at = now()
	RETURNING seq)
SELECT pg_notify($1::text, json_build_object('room', $2::text, 'seq', seq, 'saved', $3::text)::text) FROM d`

// SceneSaved is the statement, and its arguments, that tells the room of the integration's scene
// that the scene was saved. Run it inside the transaction that saved the scene, after the change:
// Postgres delivers the NOTIFY only if that transaction commits, so the room announces a save
// only once it is stored, in order with the room's edits.
func SceneSaved(integrationID, sceneID string) (query string, args []any) {
	return sceneSaved, []any{Channel, Key(integrationID, sceneID), sceneID}
}
