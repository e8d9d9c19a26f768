//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/sessiontoken"
)

// The room is server-authoritative (docs/security.md, "A server-authoritative room"): only the
// server says a scene was saved, and only after the save; only a session that may save the
// scene, or one the integrator minted with coEdit, changes the room's draft; rights are
// re-checked while the socket is open; frames are schema-checked like REST bodies.

// coEditToken mints an editor session for eu ("" for a guest) that may co-edit the room of
// splatID, the scene the grant is bound to.
func coEditToken(t *testing.T, tn tenant, eu, splatID, name string) string {
	t.Helper()
	body := map[string]any{"type": "editor", "coEdit": true, "splatId": splatID}
	if name != "" {
		body["user"] = map[string]any{"name": name}
	}
	return mintToken(t, tn, eu, body)
}

// quiet fails when a message of type typ arrives within d (other messages are skipped).
func (c *roomClient) quiet(t *testing.T, typ string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return
			}
			require.NotEqual(t, typ, m["type"], "unexpected %s message: %v", typ, m)
		case <-deadline:
			return
		}
	}
}

// open fails when the connection has been closed.
func (c *roomClient) open(t *testing.T) {
	t.Helper()
	select {
	case code := <-c.closed:
		require.FailNow(t, "the connection was closed", "code %d", code)
	default:
	}
}

// sendOversize writes a frame the server refuses before reading it whole: its error frame and
// close can arrive while the frame is still being written, and the client's reader then drops
// the connection, so a failed write is no failure here (the error frame and the close code
// are what the test checks).
func (c *roomClient) sendOversize(t *testing.T, m any) {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.WriteMessage(websocket.TextMessage, b)
}

// issuesOf are the issues of an error frame, joined.
func issuesOf(m map[string]any) string {
	var out []string
	issues, _ := m["issues"].([]any)
	for _, i := range issues {
		out = append(out, i.(string))
	}
	return strings.Join(out, "; ")
}

// The measured attack: a guest session minted without a scene or EU (as an integrator mints for
// an anonymous visitor) names a public scene, joins its room and claims a save with the scene's
// public shape under another title. The owner must not see it, and the draft must stay.
func TestRoomGuestCannotClaimASave(t *testing.T) {
	tn := newTenant(t)
	scene := roomScene(t, tn)
	public := splatOf(do(t, "GET", splatPath(scene), tn.keys(""), nil))
	owner, wo := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada"))
	require.Equal(t, true, wo["canEdit"], "the owner may edit")
	guest, wg := join(t, env.URL, scene, roomToken(t, tn, "", "", ""))
	require.Equal(t, false, wg["canEdit"], "a guest without coEdit may not")

	owner.send(t, map[string]any{"type": "edit", "fields": map[string]any{"description": "the owner's draft"}})
	require.Equal(t, "the owner's draft", guest.next(t, "edit", 2*time.Second)["fields"].(map[string]any)["description"])

	public["title"] = "Taken over"
	guest.send(t, map[string]any{"type": "saved", "splat": public})
	e := guest.next(t, "error", 2*time.Second)
	require.Equal(t, "SERVER_ONLY", e["code"])
	require.Contains(t, issuesOf(e), "type")
	owner.quiet(t, "saved", 1500*time.Millisecond)
	guest.open(t)
	// The draft is the owner's still, at the same seq: nothing was reset.
	_, w := join(t, env.URL, scene, roomToken(t, tn, "", "", ""))
	require.Equal(t, map[string]any{"description": "the owner's draft"}, w["draft"])
	require.EqualValues(t, 1, w["seq"])
	// Even the owner may not claim a save: only the server says so.
	owner.send(t, map[string]any{"type": "saved", "splat": public})
	require.Equal(t, "SERVER_ONLY", owner.next(t, "error", 2*time.Second)["code"])
	guest.quiet(t, "saved", time.Second)
	// Nor any other message only the server sends.
	for _, typ := range []string{"welcome", "join", "leave", "published", "pong", "error"} {
		guest.send(t, map[string]any{"type": typ})
		require.Equal(t, "SERVER_ONLY", guest.next(t, "error", 2*time.Second)["code"], typ)
	}
	guest.open(t)
}

// A guest's edit, and the edit of a customer who does not own the scene, never reach the
// owner's draft.
func TestRoomReadOnlyParticipantsCannotEdit(t *testing.T) {
	tn := newTenant(t)
	scene := roomScene(t, tn)
	ensureCustomer(t, tn, "bob", nil)
	owner, _ := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada"))
	owner.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": "Ada's title"}})
	for _, tok := range []string{roomToken(t, tn, "", "", ""), roomToken(t, tn, "bob", "", "Bob")} {
		p, w := join(t, env.URL, scene, tok)
		require.Equal(t, false, w["canEdit"])
		p.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": "A stranger's title"}})
		e := p.next(t, "error", 2*time.Second)
		require.Equal(t, "READ_ONLY", e["code"])
		owner.quiet(t, "edit", time.Second)
		// Presence still works: the read-only participant's camera reaches the owner.
		p.send(t, map[string]any{"type": "camera", "camera": map[string]any{"position": []float64{1, 2, 3}, "target": []float64{0, 0, 0}}})
		require.Equal(t, p.id(), owner.next(t, "camera", 2*time.Second)["from"])
		p.open(t)
	}
	_, w := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada again"))
	require.Equal(t, map[string]any{"title": "Ada's title"}, w["draft"])
	require.EqualValues(t, 1, w["seq"])
}

// A session the integrator minted with coEdit may change the draft; the mint option is
// validated.
func TestRoomCoEditSessionMayEdit(t *testing.T) {
	tn := newTenant(t)
	scene := roomScene(t, tn)
	owner, _ := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada"))
	co, w := join(t, env.URL, scene, coEditToken(t, tn, "", scene, "Invited"))
	require.Equal(t, true, w["canEdit"])
	co.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": "Co-edited"}})
	e := owner.next(t, "edit", 2*time.Second)
	require.Equal(t, co.id(), e["from"])
	require.Equal(t, "Co-edited", e["fields"].(map[string]any)["title"])

	for _, bad := range []map[string]any{
		{"type": "viewer", "coEdit": true},
		{"type": "editor", "coEdit": "yes"},
		{"type": "editor", "coEdit": nil},
		// The grant names the one scene it is for.
		{"type": "editor", "coEdit": true},
	} {
		bad["publicKey"] = tn.PublicKey
		r := do(t, "POST", "/api/editor/embed-sessions", tn.secretBearer(""), bad)
		require.True(t, issuesMention(requireEnvelope(t, r, 400), "coEdit"), "%v: %s", bad, r.Raw)
	}
}

// Only the server announces a save, after the PATCH committed: the editor's own PATCH and a
// REST PATCH alike reach every participant as 'saved' with the stored scene, and the draft is
// cleared.
func TestRoomSavedComesFromTheServer(t *testing.T) {
	tn := newTenant(t)
	scene := roomScene(t, tn)
	adaTok := roomToken(t, tn, "ada", scene, "Ada")
	owner, _ := join(t, env.URL, scene, adaTok)
	guest, _ := join(t, env.URL, scene, roomToken(t, tn, "", "", ""))
	owner.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": "Saving this"}})
	guest.next(t, "edit", 2*time.Second)

	start := time.Now()
	r := do(t, "PATCH", "/api/embed/editor/splats/"+scene, sessionHeaders(adaTok), map[string]any{"title": "Saving this",
		"levelData": map[string]any{"version": 1, "background": map[string]any{"color": "#123456"}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	for _, p := range []*roomClient{owner, guest} {
		s := p.next(t, "saved", 2*time.Second)
		splat := s["splat"].(map[string]any)
		require.Equal(t, scene, splat["id"])
		require.Equal(t, "Saving this", splat["title"])
		require.Equal(t, "#123456", splat["levelData"].(map[string]any)["background"].(map[string]any)["color"])
		require.Equal(t, splatOf(r)["updatedAt"], splat["updatedAt"])
	}
	require.Less(t, time.Since(start), 2*time.Second)
	_, w := join(t, env.URL, scene, roomToken(t, tn, "", "", ""))
	require.Equal(t, map[string]any{}, w["draft"])

	// An integrator's REST PATCH is a save too.
	require.Equal(t, 200, do(t, "PATCH", splatPath(scene), tn.keys("ada"), map[string]any{"description": "from the backend"}).Status)
	for _, p := range []*roomClient{owner, guest} {
		require.Equal(t, "from the backend", p.next(t, "saved", 2*time.Second)["splat"].(map[string]any)["description"])
	}
	// A refused PATCH (the guest's session may not save) announces nothing.
	guestTok := roomToken(t, tn, "", "", "")
	require.Equal(t, 403, do(t, "PATCH", "/api/embed/editor/splats/"+scene, sessionHeaders(guestTok), map[string]any{"title": "x"}).Status)
	owner.quiet(t, "saved", time.Second)
}

// A suspended customer's sockets and a revoked integration's close within 5 s, on the
// in-process product and on a split session process alike.
func TestRoomClosesWhenRightsEnd(t *testing.T) {
	sp := chaosSplit(t, nil)
	for _, base := range []string{env.URL, sp.URL} {
		tn := newTenant(t)
		scene := roomScene(t, tn)
		owner, _ := join(t, base, scene, roomToken(t, tn, "ada", scene, "Ada"))
		guest, _ := join(t, base, scene, roomToken(t, tn, "", "", ""))
		start := time.Now()
		require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", tn.keys("ada"), map[string]any{"status": "inactive"}).Status)
		e := owner.next(t, "error", 5*time.Second)
		require.Equal(t, "CUSTOMER_INACTIVE", e["code"], base)
		require.Equal(t, 4403, owner.closeCode(t, 5*time.Second))
		require.Less(t, time.Since(start), 5*time.Second)
		// The guest is not the customer: it stays, and sees the owner leave.
		require.Equal(t, owner.id(), guest.next(t, "leave", 5*time.Second)["id"])
		guest.open(t)

		start = time.Now()
		require.Equal(t, 200, do(t, "POST", "/admin/v1/integrations/"+tn.IntegrationID+"/revoke", admin(), nil).Status)
		require.Equal(t, "INTEGRATION_REVOKED", guest.next(t, "error", 5*time.Second)["code"], base)
		require.Equal(t, 4410, guest.closeCode(t, 5*time.Second))
		require.Less(t, time.Since(start), 5*time.Second)
	}
	// A deleted customer's socket closes too.
	tn := newTenant(t)
	scene := roomScene(t, tn)
	owner, _ := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada"))
	start := time.Now()
	require.Equal(t, 200, do(t, "DELETE", "/api/v1/external-user", tn.keys("ada"), nil).Status)
	require.Contains(t, []int{4403, 4404}, owner.closeCode(t, 5*time.Second))
	require.Less(t, time.Since(start), 5*time.Second)
}

// A participant's room lasts no longer than its session: once the token has expired the room
// closes it with 4401 (SESSION_EXPIRED, within one 2 s rights check), which the editor treats as
// final until the host renews the session (updateSession). The short-lived token is the minted
// one re-signed with the stack's own session key and a 2 s expiry.
func TestRoomClosesAParticipantWhoseSessionExpired(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	scene := roomScene(t, tn)
	keys, err := sessiontoken.NewKeys(env.Config.SessionKeys)
	require.NoError(t, err)
	claims, err := keys.Parse(roomToken(t, tn, "ada", scene, "Ada"))
	require.NoError(t, err)
	claims.ExpiresAt = jwt.NewNumericDate(time.Now().Add(2 * time.Second))
	short, err := keys.Sign(claims)
	require.NoError(t, err)

	a, _ := join(t, env.URL, scene, short)
	long, _ := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Bea"))
	e := a.next(t, "error", 15*time.Second)
	require.Equal(t, "SESSION_EXPIRED", e["code"])
	require.Equal(t, 4401, a.closeCode(t, 5*time.Second))
	// The other participant, whose session is live, stays and sees the leave.
	require.Equal(t, a.id(), long.next(t, "leave", 5*time.Second)["id"])
}

// Frames are checked like REST bodies: every problem is an error frame naming the field.
func TestRoomFramesAreSchemaChecked(t *testing.T) {
	tn := newTenant(t)
	scene := roomScene(t, tn)
	tok := roomToken(t, tn, "ada", scene, "Ada")
	for _, c := range []struct {
		name  string
		frame string
		issue string
	}{
		{"unknown type", `{"type":"takeover"}`, "type"},
		{"unknown field", `{"type":"edit","fields":{"title":"x"},"extra":1}`, "extra"},
		{"unknown edit field", `{"type":"edit","fields":{"owner":"me"}}`, "fields.owner"},
		{"wrong type", `{"type":"edit","fields":{"allowComments":"yes"}}`, "fields.allowComments"},
		{"oversize title", `{"type":"edit","fields":{"title":"` + strings.Repeat("t", 201) + `"}}`, "fields.title"},
		{"oversize description", `{"type":"edit","fields":{"description":"` + strings.Repeat("d", 2001) + `"}}`, "fields.description"},
		{"non-finite camera", `{"type":"camera","camera":{"position":[1e999,0,0],"target":[0,0,0]}}`, "camera.position"},
		{"fov out of range", `{"type":"camera","camera":{"position":[1,0,0],"target":[0,0,0],"fov":500}}`, "camera.fov"},
		{"unknown camera field", `{"type":"camera","camera":{"position":[1,0,0],"target":[0,0,0],"zoom":2}}`, "camera.zoom"},
		{"non-finite levelData", `{"type":"edit","fields":{"levelData":{"camera":{"position":[0,1e400,0],"target":[0,0,0]}}}}`, "fields.levelData.camera.position[1]"},
		{"not an object", `[1,2]`, "must be a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _ := join(t, env.URL, scene, tok)
			p.ws.SetWriteDeadline(time.Now().Add(2 * time.Second))
			require.NoError(t, p.ws.WriteMessage(websocket.TextMessage, []byte(c.frame)))
			e := p.next(t, "error", 2*time.Second)
			require.Equal(t, "VALIDATION", e["code"])
			require.Contains(t, issuesOf(e), c.issue)
			require.Equal(t, 4400, p.closeCode(t, 5*time.Second))
		})
	}
	// A frame over 64 KiB: an error frame saying so, then 1009.
	p, _ := join(t, env.URL, scene, tok)
	p.sendOversize(t, map[string]any{"type": "edit", "fields": map[string]any{"levelData": map[string]any{"k": strings.Repeat("y", 70_000)}}})
	e := p.next(t, "error", 2*time.Second)
	require.Equal(t, "MESSAGE_TOO_LARGE", e["code"])
	require.Equal(t, 1009, p.closeCode(t, 5*time.Second))
}
