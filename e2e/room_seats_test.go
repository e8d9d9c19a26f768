//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Seats of the multiplayer room (issue 38, points 2 and 3; docs/embeds.md "Multiplayer room"):
// sockets per session and per customer are bounded, the scene's editors always get a seat, and a
// coEdit grant is bound to the scene it was minted for.

// fillRoom fills the room of scene with 32 guests, each its own session (a session holds at most
// 4 sockets), and returns them in join order.
func fillRoom(t *testing.T, tn tenant, scene string) []*roomClient {
	t.Helper()
	var guests []*roomClient
	for range 32 {
		g, _ := join(t, env.URL, scene, roomToken(t, tn, "", "", ""))
		guests = append(guests, g)
	}
	return guests
}

// One guest session holds at most 4 sockets, across rooms; the 5th is refused with 4429
// TOO_MANY_SOCKETS, and a freed socket makes room again. A customer's sessions share the bound:
// a new token per tab changes nothing.
func TestRoomSocketsPerSessionAndCustomer(t *testing.T) {
	tn := newTenant(t)
	scene, other := roomScene(t, tn), roomScene(t, tn)
	guest := roomToken(t, tn, "", "", "")
	var held []*roomClient
	for _, s := range []string{scene, scene, scene, other} {
		c, _ := join(t, env.URL, s, guest)
		held = append(held, c)
	}
	for _, s := range []string{scene, other} {
		code, close := refused(t, env.URL, s, guest)
		require.Equal(t, "TOO_MANY_SOCKETS", code)
		require.Equal(t, 4429, close)
	}
	// Another guest session is its own visitor.
	join(t, env.URL, scene, roomToken(t, tn, "", "", ""))
	// Once one socket has left, the session may open another.
	held[0].leave()
	require.Equal(t, held[0].id(), held[1].next(t, "leave", 2*time.Second)["id"])
	join(t, env.URL, scene, guest)

	// Ada's sessions, each minted anew, count against Ada.
	for range 4 {
		join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada"))
	}
	code, close := refused(t, env.URL, other, roomToken(t, tn, "ada", other, "Ada"))
	require.Equal(t, "TOO_MANY_SOCKETS", code)
	require.Equal(t, 4429, close)
}

// A full room seats the scene's owner and the scene's coEdit session by evicting the newest
// guest (4001 SEAT_TAKEN, its leave shown to everyone); a guest still gets 4409 ROOM_FULL.
func TestRoomEditorsTakeAGuestsSeat(t *testing.T) {
	tn := newTenant(t)
	scene := roomScene(t, tn)
	guests := fillRoom(t, tn, scene)
	code, close := refused(t, env.URL, scene, roomToken(t, tn, "", "", ""))
	require.Equal(t, "ROOM_FULL", code)
	require.Equal(t, 4409, close)

	newest, first := guests[31], guests[0]
	owner, w := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada"))
	require.Len(t, w["peers"], 32)
	require.Equal(t, true, w["canEdit"])
	require.NotContains(t, peerIDs(w), newest.id(), "the evicted guest is not listed")
	require.Equal(t, "SEAT_TAKEN", newest.next(t, "error", 2*time.Second)["code"])
	require.Equal(t, 4001, newest.closeCode(t, 5*time.Second))
	require.Equal(t, newest.id(), first.next(t, "leave", 2*time.Second)["id"])
	// The owner hears that leave too: it was announced in the owner's own join.
	require.Equal(t, newest.id(), owner.next(t, "leave", 2*time.Second)["id"])

	// The scene's coEdit session is seated the same way: the next-newest guest goes.
	co, w := join(t, env.URL, scene, coEditToken(t, tn, "", scene, "Invited"))
	require.Equal(t, true, w["canEdit"])
	require.Equal(t, 4001, guests[30].closeCode(t, 5*time.Second))
	// The eviction's leave goes out before the join, in the join's transaction.
	require.Equal(t, guests[30].id(), owner.next(t, "leave", 2*time.Second)["id"])
	require.Equal(t, co.id(), owner.next(t, "join", 2*time.Second)["peer"].(map[string]any)["id"])

	// A coEdit session of another scene is a guest here: the room stays full for it.
	code, close = refused(t, env.URL, scene, coEditToken(t, tn, "", roomScene(t, tn), ""))
	require.Equal(t, "ROOM_FULL", code)
	require.Equal(t, 4409, close)
}

// A coEdit session edits only the room of the scene named when it was minted: in another
// customer's public scene it is read-only, and the mint refuses a grant without a scene (400)
// or for a scene the session may not open (403).
func TestRoomCoEditBoundToItsScene(t *testing.T) {
	tn := newTenant(t)
	adas := roomScene(t, tn)
	bobs := newScene(t, tn, "bob", 4)["id"].(string)
	r := do(t, "PATCH", splatPath(bobs), tn.keys("bob"), map[string]any{"visibility": "public"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	bob, _ := join(t, env.URL, bobs, roomToken(t, tn, "bob", bobs, "Bob"))

	co := coEditToken(t, tn, "ada", adas, "Ada's invitee")
	c, w := join(t, env.URL, bobs, co)
	require.Equal(t, false, w["canEdit"], "a grant for Ada's scene does not reach Bob's")
	c.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": "Taken over", "visibility": "private"}})
	require.Equal(t, "READ_ONLY", c.next(t, "error", 2*time.Second)["code"])
	bob.quiet(t, "edit", time.Second)
	_, wb := join(t, env.URL, bobs, roomToken(t, tn, "bob", bobs, "Bob again"))
	require.Equal(t, map[string]any{}, wb["draft"])

	_, w = join(t, env.URL, adas, co)
	require.Equal(t, true, w["canEdit"], "the grant holds in the room of its scene")

	// Named explicitly, another customer's public scene may be co-edited.
	_, w = join(t, env.URL, bobs, coEditToken(t, tn, "ada", bobs, ""))
	require.Equal(t, true, w["canEdit"])

	r = do(t, "POST", "/api/editor/embed-sessions", tn.secretBearer("ada"), map[string]any{"publicKey": tn.PublicKey, "coEdit": true})
	require.True(t, issuesMention(requireEnvelope(t, r, 400), "coEdit: requires splatId"), string(r.Raw))
	private := newScene(t, tn, "bob", 4)["id"].(string)
	r = do(t, "POST", "/api/editor/embed-sessions", tn.secretBearer("ada"), map[string]any{"publicKey": tn.PublicKey, "coEdit": true, "splatId": private})
	requireEnvelope(t, r, 403)
}

// peerIDs are the ids of a welcome's peers.
func peerIDs(w map[string]any) []string {
	var out []string
	for _, p := range w["peers"].([]any) {
		out = append(out, p.(map[string]any)["id"].(string))
	}
	return out
}
