//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChaosRoomStrangers (issue 26, point 3): guests join the room of a public scene as an
// integrator mints them for anonymous visitors (no scene, no EU, no coEdit) and claim what only
// the server may say or the owner may do: a save with another title, an edit of the title, a
// frame with a number no store holds and one too large to read. Promises: every such frame gets
// an error frame, none reaches the owner, and the owner's draft is the owner's.
func TestChaosRoomStrangers(t *testing.T) {
	rep := newChaosReport(t, "room strangers")
	tn := newTenant(t)
	scene := roomScene(t, tn)
	public := splatOf(do(t, "GET", splatPath(scene), tn.keys(""), nil))
	owner, _ := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada"))
	owner.send(t, map[string]any{"type": "edit", "fields": map[string]any{"description": "the owner's draft"}})

	n := chaosScale("SPLATHOST_CHAOS_ROOM_GUESTS", 3, 30)
	public["title"] = "Taken over"
	var sent, refused int
	for range n {
		guest, _ := join(t, env.URL, scene, roomToken(t, tn, "", "", ""))
		for _, frame := range []any{
			map[string]any{"type": "saved", "splat": public},
			map[string]any{"type": "edit", "fields": map[string]any{"title": "Taken over"}},
			// 1e400 is no finite double: the frame is written raw, as a client could.
			rawFrame(`{"type":"edit","fields":{"levelData":{"version":1,"camera":{"position":[1e400,0,0],"target":[0,0,0]}}}}`),
		} {
			sent++
			guest.send(t, frame)
			if e := guest.next(t, "error", 2*time.Second); e["code"] != nil {
				refused++
			}
		}
		sent++
		guest.sendOversize(t, map[string]any{"type": "edit", "fields": map[string]any{"description": strings.Repeat("x", 70_000)}})
		// Refused either way: its error frame, or the close (1009) when the server's close
		// overtakes the frame it wrote while the oversized one was still being sent.
		if refusedOrClosed(guest, 5*time.Second) {
			refused++
		}
		guest.leave()
	}
	owner.quiet(t, "saved", time.Second)
	_, w := join(t, env.URL, scene, roomToken(t, tn, "", "", ""))
	changed := 0
	if d, _ := w["draft"].(map[string]any); d["description"] != "the owner's draft" || d["title"] != nil {
		changed = 1
	}
	g := splatOf(do(t, "GET", splatPath(scene), tn.keys(""), nil))

	rep.info("guests", float64(n))
	rep.info("hostile frames", float64(sent))
	rep.equal("refused (error frame, or closed)", float64(refused), float64(sent))
	rep.zero("drafts a guest changed", float64(changed))
	require.NotEqual(t, "Taken over", g["title"], "the stored title is the owner's")
	rep.check()
}

// rawFrame is JSON text sent as it is (roomClient.send marshals it as a JSON raw message).
type rawFrame string

// MarshalJSON returns the frame's text unchanged.
func (f rawFrame) MarshalJSON() ([]byte, error) { return []byte(f), nil }

// refusedOrClosed waits for an error frame or the connection's end.
func refusedOrClosed(c *roomClient, within time.Duration) bool {
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok || m["type"] == "error" {
				return true
			}
		case <-c.closed:
			return true
		case <-deadline:
			return false
		}
	}
}

// TestChaosRoomSeats (issue 38, point 2) replays the finding: one anonymous editor session opens
// 34 sockets to a public scene (32 were admitted), then the owner comes to a room full of
// guests (it got ROOM_FULL). Promises: the session holds at most 4 sockets, the 5th and later get
// 4429, and the owner is seated in the full room, which evicts a guest (4001).
func TestChaosRoomSeats(t *testing.T) {
	rep := newChaosReport(t, "room seats")
	tn := newTenant(t)
	scene := roomScene(t, tn)
	one := roomToken(t, tn, "", "", "")
	admitted, tooMany := 0, 0
	for range 34 {
		c := dialRoom(t, env.URL, scene, one)
		m := c.first(t, 5*time.Second)
		switch {
		case m["type"] == "welcome":
			admitted++
		case m["code"] == "TOO_MANY_SOCKETS" && c.closeCode(t, 5*time.Second) == 4429:
			tooMany++
		}
	}
	// The room fills with guests, each its own session.
	for range 32 - admitted {
		join(t, env.URL, scene, roomToken(t, tn, "", "", ""))
	}
	owner := dialRoom(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada"))
	seated := 0
	if owner.first(t, 5*time.Second)["type"] == "welcome" {
		seated = 1
	}
	rep.info("sockets one session opened", 34)
	rep.atMost("sockets admitted", float64(admitted), 4)
	rep.equal("refused with 4429 TOO_MANY_SOCKETS", float64(tooMany), float64(34-admitted))
	rep.equal("owner seated in a room full of guests", float64(seated), 1)
	rep.check()
}

// first is the first message the server sends: the welcome of an admitted participant, the error
// frame of a refused one.
func (c *roomClient) first(t *testing.T, within time.Duration) map[string]any {
	t.Helper()
	select {
	case m, ok := <-c.msgs:
		require.True(t, ok, "closed before any message")
		return m
	case <-time.After(within):
		require.FailNow(t, "no message within "+within.String())
		return nil
	}
}
