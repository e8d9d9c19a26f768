//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fasthttp/websocket"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/testenv"
)

// The multiplayer room (contract item 10, docs/embeds.md "Multiplayer room"), driven with a Go
// WebSocket client against the in-process product and against split gateway and session
// processes on the same stack.

// roomClient is one participant: a WebSocket to /api/embed/room whose frames a goroutine
// decodes into msgs; the close code (or -1 for a connection that broke without one) lands in
// closed.
type roomClient struct {
	ws     *websocket.Conn
	msgs   chan map[string]any
	closed chan int
	mu     sync.Mutex
	self   map[string]any
}

// roomURL is the room's WebSocket URL on the gateway at base.
func roomURL(base, splatID, token string) string {
	q := url.Values{}
	if splatID != "" {
		q.Set("splatId", splatID)
	}
	if token != "" {
		q.Set("session", token)
	}
	return "ws" + strings.TrimPrefix(base, "http") + "/api/embed/room?" + q.Encode()
}

// dialRoomE connects a participant; the handshake succeeds even for a refused one, whose
// refusal is its close code.
func dialRoomE(base, splatID, token string) (*roomClient, error) {
	ws, resp, err := websocket.DefaultDialer.Dial(roomURL(base, splatID, token), nil)
	if err != nil {
		if resp != nil {
			return nil, errors.New(err.Error() + ": " + resp.Status)
		}
		return nil, err
	}
	c := &roomClient{ws: ws, msgs: make(chan map[string]any, 4096), closed: make(chan int, 1)}
	go func() {
		defer ws.Close()
		for {
			_, frame, err := ws.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					c.closed <- ce.Code
				} else {
					c.closed <- -1
				}
				close(c.msgs)
				return
			}
			var m map[string]any
			if json.Unmarshal(frame, &m) == nil {
				c.msgs <- m
			}
		}
	}()
	return c, nil
}

func dialRoom(t *testing.T, base, splatID, token string) *roomClient {
	t.Helper()
	c, err := dialRoomE(base, splatID, token)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.ws.Close() })
	return c
}

// join connects and returns the participant after its welcome.
func join(t *testing.T, base, splatID, token string) (*roomClient, map[string]any) {
	t.Helper()
	c := dialRoom(t, base, splatID, token)
	w := c.next(t, "welcome", 5*time.Second)
	c.self = w["self"].(map[string]any)
	return c, w
}

// id is the participant's id.
func (c *roomClient) id() string { return c.self["id"].(string) }

// next waits for the next message of type typ, skipping others (pong, camera, ...).
func (c *roomClient) next(t *testing.T, typ string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-c.msgs:
			require.True(t, ok, "connection closed while waiting for %q", typ)
			if m["type"] == typ {
				return m
			}
		case <-deadline:
			require.FailNow(t, "no "+typ+" message within "+within.String())
		}
	}
}

// closeCode waits for the server's close and returns its code.
func (c *roomClient) closeCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case code := <-c.closed:
		return code
	case <-time.After(within):
		require.FailNow(t, "the server did not close within "+within.String())
		return 0
	}
}

// refused connects and returns the refusal's error frame code and close code.
func refused(t *testing.T, base, splatID, token string) (string, int) {
	t.Helper()
	c := dialRoom(t, base, splatID, token)
	e := c.next(t, "error", 5*time.Second)
	return e["code"].(string), c.closeCode(t, 5*time.Second)
}

func (c *roomClient) send(t *testing.T, m any) {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	c.mu.Lock()
	defer c.mu.Unlock()
	require.NoError(t, c.ws.WriteMessage(websocket.TextMessage, b))
}

// leave closes the connection as a browser leaving the page does (1001).
func (c *roomClient) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
}

// peerNames are the names of a welcome's peers.
func peerNames(w map[string]any) []string {
	var out []string
	for _, p := range w["peers"].([]any) {
		out = append(out, p.(map[string]any)["name"].(string))
	}
	return out
}

// roomScene is a public scene of ada's, so guests (no customer) may open it too.
func roomScene(t *testing.T, tn tenant) string {
	t.Helper()
	id := newScene(t, tn, "ada", 4)["id"].(string)
	r := do(t, "PATCH", splatPath(id), tn.keys("ada"), map[string]any{"visibility": "public"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	return id
}

// roomToken mints an editor session for eu ("" for a guest) with an optional user name.
func roomToken(t *testing.T, tn tenant, eu, splatID, name string) string {
	t.Helper()
	body := map[string]any{"type": "editor"}
	if splatID != "" {
		body["splatId"] = splatID
	}
	if name != "" {
		body["user"] = map[string]any{"name": name, "avatarUrl": "https://example.com/a.png"}
	}
	return mintToken(t, tn, eu, body)
}

func TestRoomParticipantsEditsAndSaves(t *testing.T) {
	tn := newTenant(t)
	scene := roomScene(t, tn)
	// 36 characters, some of them outside ASCII, and a control character that is not shown.
	long := "Zoë Ångström-Łukasiewicz\u0007 the 3rd 🎨🎨🎨🎨"
	ada := roomToken(t, tn, "ada", scene, long)
	guest := roomToken(t, tn, "", "", "")
	// A guest the integrator lets co-edit (coEdit): without it a guest's edits are refused
	// (room_authority_test.go).
	coGuest := coEditToken(t, tn, "", scene, "")

	a, wa := join(t, env.URL, scene, ada)
	want := "Zoë Ångström-Łukasiewicz the 3rd"
	require.Equal(t, 32, utf8.RuneCountInString(want))
	require.Equal(t, want, a.self["name"])
	require.Equal(t, false, a.self["guest"])
	require.Equal(t, "https://example.com/a.png", a.self["avatarUrl"])
	require.Regexp(t, `^#[0-9a-f]{6}$`, a.self["colour"])
	require.Equal(t, []string{want}, peerNames(wa))
	require.Equal(t, map[string]any{}, wa["draft"])

	b, wb := join(t, env.URL, scene, guest)
	require.Equal(t, "Guest 1", b.self["name"])
	require.Equal(t, true, b.self["guest"])
	require.Nil(t, b.self["avatarUrl"])
	require.NotEqual(t, a.self["colour"], b.self["colour"])
	require.Equal(t, []string{want, "Guest 1"}, peerNames(wb))
	require.Equal(t, b.id(), a.next(t, "join", 2*time.Second)["peer"].(map[string]any)["id"])

	c, wc := join(t, env.URL, scene, coGuest)
	require.Equal(t, "Guest 2", c.self["name"])
	require.Len(t, wc["peers"], 3)
	// Guest 1 leaves: everyone sees it within 2 s, and the next guest is Guest 1 again.
	b.leave()
	require.Equal(t, b.id(), a.next(t, "leave", 2*time.Second)["id"])
	require.Equal(t, b.id(), c.next(t, "leave", 2*time.Second)["id"])
	d, _ := join(t, env.URL, scene, guest)
	require.Equal(t, "Guest 1", d.self["name"])

	// An edit by one arrives at the others within 2 s, with its sender and the draft's seq.
	start := time.Now()
	a.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": "Renamed",
		"levelData": map[string]any{"camera": map[string]any{"position": []float64{0, 1, 2}, "target": []float64{0, 0, 0}}}}})
	e := c.next(t, "edit", 2*time.Second)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, a.id(), e["from"])
	require.Equal(t, "Renamed", e["fields"].(map[string]any)["title"])
	require.EqualValues(t, 1, e["seq"])
	require.Equal(t, a.id(), d.next(t, "edit", 2*time.Second)["from"])
	// An event too large for a NOTIFY payload goes through a table row, transparently.
	big := strings.Repeat("x", 20_000)
	c.send(t, map[string]any{"type": "edit", "fields": map[string]any{"description": "Described",
		"levelData": map[string]any{"background": map[string]any{"color": "#102030"}, "note": big}}})
	e = a.next(t, "edit", 2*time.Second)
	require.Equal(t, big, e["fields"].(map[string]any)["levelData"].(map[string]any)["note"])
	require.EqualValues(t, 2, e["seq"])

	// A newcomer starts from the merged draft: last writer per field, levelData per key.
	late, wl := join(t, env.URL, scene, guest)
	require.EqualValues(t, 2, wl["seq"])
	draft := wl["draft"].(map[string]any)
	require.Equal(t, "Renamed", draft["title"])
	require.Equal(t, "Described", draft["description"])
	ld := draft["levelData"].(map[string]any)
	require.Contains(t, ld, "camera")
	require.Contains(t, ld, "background")
	require.Equal(t, big, ld["note"])
	require.Equal(t, "Guest 3", late.self["name"])

	// Cameras and pings.
	d.send(t, map[string]any{"type": "camera", "camera": map[string]any{"position": []float64{1, 2, 3}, "target": []float64{0, 0, 0}, "fov": 60}})
	cam := a.next(t, "camera", 2*time.Second)
	require.Equal(t, d.id(), cam["from"])
	require.EqualValues(t, 60, cam["camera"].(map[string]any)["fov"])
	a.send(t, map[string]any{"type": "ping"})
	a.next(t, "pong", 2*time.Second)

	// A save (the owner's PATCH; only the server announces it) clears the draft: every
	// participant gets 'saved' with the stored scene, the saver too.
	r := do(t, "PATCH", "/api/embed/editor/splats/"+scene, sessionHeaders(ada), map[string]any{"title": "Renamed"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	for _, p := range []*roomClient{a, c, d, late} {
		s := p.next(t, "saved", 2*time.Second)
		require.Equal(t, scene, s["splat"].(map[string]any)["id"])
		require.Equal(t, "Renamed", s["splat"].(map[string]any)["title"])
		require.EqualValues(t, 3, s["seq"])
	}
	_, w := join(t, env.URL, scene, guest)
	require.Equal(t, map[string]any{}, w["draft"])
	require.EqualValues(t, 3, w["seq"])
}

func TestRoomRefusals(t *testing.T) {
	tn := newTenant(t)
	scene := roomScene(t, tn)
	private := newScene(t, tn, "ada", 4)["id"].(string)
	ada := roomToken(t, tn, "ada", scene, "Ada")
	guest := roomToken(t, tn, "", "", "")

	// A plain request is not an upgrade (426, documented).
	requireEnvelope(t, doAt(t, env.URL, "GET", "/api/embed/room?splatId="+scene+"&session="+ada, nil, nil), 426)

	code, close := refused(t, env.URL, scene, ada+"x")
	require.Equal(t, "UNAUTHORIZED", code)
	require.Equal(t, 4401, close)
	_, close = refused(t, env.URL, scene, "")
	require.Equal(t, 4401, close)
	viewer := mintToken(t, tn, "ada", map[string]any{"type": "viewer", "splatId": scene})
	_, close = refused(t, env.URL, scene, viewer)
	require.Equal(t, 4403, close)
	_, close = refused(t, env.URL, "", ada)
	require.Equal(t, 4400, close)
	// Another customer's private scene, a guest on a private scene, another integration's
	// scene, and no scene at all: 4404 alike.
	ensureCustomer(t, tn, "bob", nil)
	bob := roomToken(t, tn, "bob", "", "Bob")
	_, close = refused(t, env.URL, private, bob)
	require.Equal(t, 4404, close)
	_, close = refused(t, env.URL, private, guest)
	require.Equal(t, 4404, close)
	other := newTenant(t)
	_, close = refused(t, env.URL, scene, roomToken(t, other, "", "", ""))
	require.Equal(t, 4404, close)
	_, close = refused(t, env.URL, "0123456789abcdef01234567", ada)
	require.Equal(t, 4404, close)
	_, close = refused(t, env.URL, "not-an-id", ada)
	require.Equal(t, 4404, close)
	// The owner may open the private scene.
	owner, _ := join(t, env.URL, private, roomToken(t, tn, "ada", private, "Ada"))
	owner.leave()

	// A message over 64 KiB: an error frame, then 1009.
	c, _ := join(t, env.URL, scene, guest)
	c.sendOversize(t, map[string]any{"type": "edit", "fields": map[string]any{"description": strings.Repeat("y", 70_000)}})
	require.Equal(t, "MESSAGE_TOO_LARGE", c.next(t, "error", 2*time.Second)["code"])
	require.Equal(t, 1009, c.closeCode(t, 5*time.Second))
	// Malformed: 4400 after an error frame naming the problem.
	c, _ = join(t, env.URL, scene, guest)
	c.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": 5}})
	require.Equal(t, "VALIDATION", c.next(t, "error", 2*time.Second)["code"])
	require.Equal(t, 4400, c.closeCode(t, 5*time.Second))
	// A flood past the bucket (30/s, burst 60): 4429.
	c, _ = join(t, env.URL, scene, guest)
	for i := 0; i < 100; i++ {
		c.mu.Lock()
		err := c.ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping"}`))
		c.mu.Unlock()
		if err != nil {
			break
		}
	}
	require.Equal(t, "RATE_LIMITED", c.next(t, "error", 5*time.Second)["code"])
	require.Equal(t, 4429, c.closeCode(t, 5*time.Second))
	// A draft that would outgrow what a save accepts: 1009.
	c, _ = join(t, env.URL, scene, coEditToken(t, tn, "", scene, ""))
	for i := 0; i < 6; i++ {
		c.send(t, map[string]any{"type": "edit", "fields": map[string]any{"levelData": map[string]any{
			"k" + string(rune('a'+i)): strings.Repeat("z", 60_000)}}})
	}
	require.Equal(t, 1009, c.closeCode(t, 5*time.Second))

	// 32 participants fill a room; a 33rd guest is refused.
	full := roomScene(t, tn)
	fillRoom(t, tn, full)
	code, close = refused(t, env.URL, full, roomToken(t, tn, "", "", ""))
	require.Equal(t, "ROOM_FULL", code)
	require.Equal(t, 4409, close)
}

func TestRoomAcrossProcessesSurvivesASessionCrash(t *testing.T) {
	sp := chaosSplit(t, func(o *testenv.SplitOptions) { o.Gateways, o.Sessions = 2, 2 })
	require.Len(t, sp.URLs, 2)
	tn := newTenant(t)
	scene := roomScene(t, tn)
	ada := roomToken(t, tn, "ada", scene, "Ada")
	guest := coEditToken(t, tn, "", scene, "")

	// The split gateway refuses a bad token itself; the session behind it refuses a viewer.
	_, close := refused(t, sp.URLs[0], scene, ada+"x")
	require.Equal(t, 4401, close)
	_, close = refused(t, sp.URLs[1], scene, mintToken(t, tn, "ada", map[string]any{"type": "viewer", "splatId": scene}))
	require.Equal(t, 4403, close)

	// a is on gateway 1 → session 1, b on gateway 2 → session 2, c on the in-process product.
	a, _ := join(t, sp.URLs[0], scene, ada)
	b, wb := join(t, sp.URLs[1], scene, guest)
	require.Equal(t, []string{"Ada", "Guest 1"}, peerNames(wb))
	require.Equal(t, b.id(), a.next(t, "join", 2*time.Second)["peer"].(map[string]any)["id"])
	c, _ := join(t, env.URL, scene, guest)
	require.Equal(t, "Guest 2", c.self["name"])
	start := time.Now()
	a.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": "Across"}})
	require.Equal(t, "Across", b.next(t, "edit", 2*time.Second)["fields"].(map[string]any)["title"])
	require.Equal(t, "Across", c.next(t, "edit", 2*time.Second)["fields"].(map[string]any)["title"])
	require.Less(t, time.Since(start), 2*time.Second)

	// kill -9 of a's session process: a's connection breaks; b edits meanwhile.
	require.NoError(t, sp.Kill("session"))
	a.closeCode(t, 5*time.Second)
	b.send(t, map[string]any{"type": "edit", "fields": map[string]any{"description": "while a was away"}})
	c.next(t, "edit", 2*time.Second)
	require.NoError(t, sp.Start("session"))
	// a reconnects through the same gateway and resyncs from its welcome.
	var wa map[string]any
	require.Eventually(t, func() bool {
		r, err := dialRoomE(sp.URLs[0], scene, ada)
		if err != nil {
			return false
		}
		select {
		case m := <-r.msgs:
			if m["type"] == "welcome" {
				a, wa = r, m
				return true
			}
		case <-time.After(3 * time.Second):
		}
		_ = r.ws.Close()
		return false
	}, 30*time.Second, 200*time.Millisecond)
	t.Cleanup(func() { _ = a.ws.Close() })
	draft := wa["draft"].(map[string]any)
	require.Equal(t, "Across", draft["title"])
	require.Equal(t, "while a was away", draft["description"])
	// The crashed process's row of a's first connection expires (15 s) and is swept as a leave.
	oldA := ""
	for _, p := range wa["peers"].([]any) {
		if p.(map[string]any)["name"] == "Ada" && p.(map[string]any)["id"] != wa["self"].(map[string]any)["id"] {
			oldA = p.(map[string]any)["id"].(string)
		}
	}
	require.NotEmpty(t, oldA, "the killed process's row is still listed until it expires")
	require.Equal(t, oldA, b.next(t, "leave", 25*time.Second)["id"])
	require.Equal(t, oldA, a.next(t, "leave", 5*time.Second)["id"])

	// A graceful restart of b's session process closes b with 1012; b comes back.
	go func() { _ = sp.Term("session-2", 20*time.Second) }()
	require.Equal(t, 1012, b.closeCode(t, 10*time.Second))
	require.Eventually(t, func() bool { return sp.PID("session-2") == 0 }, 20*time.Second, 50*time.Millisecond)
	require.NoError(t, sp.Start("session-2"))
	b2, wb2 := join(t, sp.URLs[1], scene, guest)
	require.Equal(t, "while a was away", wb2["draft"].(map[string]any)["description"])
	// The shutdown deleted b's row at once: a saw b leave without waiting for an expiry.
	require.Equal(t, b.id(), a.next(t, "leave", 2*time.Second)["id"])
	a.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": "Back"}})
	require.Equal(t, "Back", b2.next(t, "edit", 2*time.Second)["fields"].(map[string]any)["title"])
}
