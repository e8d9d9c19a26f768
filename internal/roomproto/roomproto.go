// Package roomproto holds what the multiplayer room shows beyond the session service that runs
// it (docs/embeds.md, "Multiplayer room"): its route, which the gateway tunnels, and the limits
// a client meets, which the benchmark fills rooms up to.
package roomproto

// Path is the multiplayer room's WebSocket route: GET
// /api/embed/room?splatId=<id>&session=<session token>. The gateway authenticates the token in
// the URL (a browser cannot set Authorization on a WebSocket) and hands the upgrade to the
// session service.
const Path = "/api/embed/room"

// Limits of the room (contract item 10 and the decisions of issue 13).
const (
	// Capacity is the most participants one room admits; the next gets 4409.
	Capacity = 32
	// MaxMessage is the largest client message; a larger one closes with 1009.
	MaxMessage = 64 << 10
	// Rate and Burst are each connection's token bucket: 30 messages a second sustained, 60 at
	// once; a client that exceeds it is closed with 4429.
	Rate  = 30
	Burst = 60
)
