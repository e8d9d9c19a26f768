package session

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// The room is server-authoritative (docs/security.md, "A server-authoritative room"): who may
// change the draft is decided at admission and checked again, with the integration, the customer
// and the scene as they are now, on every message that changes something and every rightsEvery.

// rightsEvery is how often every participant's rights are checked again: a revoked integration,
// an inactive or deleted customer, an expired session or a scene it may no longer open closes the
// socket within it (plus the NOTIFY that reaches the credential cache, milliseconds).
const rightsEvery = 2 * time.Second

// Refusals of a participant whose rights ended; each closes its socket with 4000 + status.
var (
	errSessionExpired   = apperr.Unauthorized("the session has expired: renew it (updateSession) to rejoin").With("code", "SESSION_EXPIRED")
	errKeyGone          = apperr.Unauthorized("the session's public key no longer belongs to its integration")
	errRevoked          = apperr.Gone("integration revoked") // INTEGRATION_REVOKED, as every 410
	errEditorDisabled   = apperr.Forbidden("the editor capability is no longer enabled for this integration").With("code", "EDITOR_DISABLED")
	errCustomerInactive = apperr.CustomerInactive(http.StatusForbidden, "this customer is inactive or deleted: the session may no longer edit")
	errSceneGone        = apperr.NotFound("the scene is no longer open to this session")
)

// Refusals of one message; the socket stays open (an error frame, nothing relayed).
var (
	errReadOnly = apperr.Forbidden("this session may not change the scene: only its owner's sessions, and sessions minted with coEdit for this scene, edit; presence and camera are shared").
			With("code", "READ_ONLY")
	errServerOnly = apperr.Forbidden("only the server sends this message: it announces a save once the save is stored").
			With("code", "SERVER_ONLY")
)

// rights are what a participant may do, as admitted.
type rights struct {
	integrationID string
	publicKey     string
	productSlug   string
	sceneID       string
	// eu and sub are the customer the session is scoped to (external id and record id); empty
	// for a guest.
	eu, sub string
	// canEdit says the session may change the draft: it is scoped to the scene's owner, or the
	// integrator minted it with coEdit for this scene.
	canEdit bool
	// expires is when the session token ends (zero: never checked).
	expires time.Time
}

// admission is who may join which room, decided before the upgrade.
type admission struct {
	room string
	// holder is who the socket counts against (roomproto.PerHolder): the scoped session's
	// customer, or the guest session.
	holder string
	name   string
	avatar *string
	rights rights
}

// room answers GET /api/embed/room: the admission rules of the contract (item 10), then the
// upgrade. A refused request is upgraded and closed with the refusal's code (httpx.CloseCode),
// the only refusal a browser's WebSocket can see.
func (s *Service) room(c *fiber.Ctx) error {
	if err := httpx.RequireUpgrade(c); err != nil {
		return err
	}
	adm, err := s.admitRoom(c)
	if err != nil {
		if apperr.From(err).Status >= 500 {
			s.log.ErrorContext(c.UserContext(), "room admission failed", "error", err, "requestId", httpx.RequestID(c))
		}
		return httpx.RefuseUpgrade(c, err)
	}
	return s.rooms.upgrade(c, adm)
}

// admitRoom reads the admission's request (the session, its claims, ?splatId) and applies the
// admission rules to it (admit, room_admission.go).
func (s *Service) admitRoom(c *fiber.Ctx) (*admission, error) {
	caller := httpx.CallerOf(c)
	ss, err := sessionCaller(caller)
	if err != nil {
		return nil, err
	}
	name, _ := caller.Session[claimName].(string)
	avatar, _ := caller.Session[claimAvatar].(string)
	return s.admit(c.UserContext(), joinRequest{session: ss, customerInactive: caller.CustomerInactive(), publicKey: caller.PublicKey,
		expires: sessionExpiry(caller.Session), name: name, avatar: avatar, splatID: c.Query("splatId"), sessionID: caller.SessionKey()})
}

// rightsMemo remembers, for one round of checks, what the credential cache said, so a room of
// 32 participants of one integration costs one lookup. A nil memo looks everything up.
type rightsMemo struct {
	integrations map[string]*credentials.Integration
	customers    map[string]bool
}

// check reports why the participant's rights have ended (an error to close it with), or nil.
// The integration and the customer are read from the credential cache, which drops an entry on
// the NOTIFY of its change (credentials.Channel) and bypasses itself while it cannot hear them:
// a revocation or a customer's suspension is seen at the next check. A lookup that failed (the
// database unreachable) is an internal error.
func (r *Rooms) check(ctx context.Context, rt *rights, now time.Time, memo *rightsMemo) error {
	if !rt.expires.IsZero() && now.After(rt.expires) {
		return errSessionExpired
	}
	in, ok := memo.integration(rt.publicKey)
	if !ok {
		var err error
		if in, err = r.creds.ByPublicKey(ctx, rt.publicKey); err != nil {
			return apperr.Internal(err)
		}
		memo.setIntegration(rt.publicKey, in)
	}
	switch {
	case in == nil || in.ID != rt.integrationID:
		return errKeyGone
	case in.Revoked:
		return errRevoked
	case !slices.Contains(in.Capabilities, sessiontoken.TypeEditor):
		return errEditorDisabled
	}
	if rt.eu == "" {
		return nil
	}
	active, ok := memo.customer(rt.integrationID, rt.eu)
	if !ok {
		var err error
		if active, err = r.creds.CustomerActive(ctx, rt.integrationID, rt.eu); err != nil {
			return apperr.Internal(err)
		}
		memo.setCustomer(rt.integrationID, rt.eu, active)
	}
	if !active {
		return errCustomerInactive
	}
	return nil
}

func (m *rightsMemo) integration(pk string) (*credentials.Integration, bool) {
	if m == nil {
		return nil, false
	}
	in, ok := m.integrations[pk]
	return in, ok
}

func (m *rightsMemo) setIntegration(pk string, in *credentials.Integration) {
	if m != nil {
		m.integrations[pk] = in
	}
}

func (m *rightsMemo) customer(integrationID, eu string) (bool, bool) {
	if m == nil {
		return false, false
	}
	active, ok := m.customers[integrationID+"\x00"+eu]
	return active, ok
}

func (m *rightsMemo) setCustomer(integrationID, eu string, active bool) {
	if m != nil {
		m.customers[integrationID+"\x00"+eu] = active
	}
}

// recheck checks every local participant's rights again and closes those whose rights ended:
// the session, the integration and the customer (check), then the scenes, in one query.
func (r *Rooms) recheck(ctx context.Context) {
	r.mu.Lock()
	conns := r.all()
	r.mu.Unlock()
	if len(conns) == 0 {
		return
	}
	now := time.Now()
	memo := &rightsMemo{integrations: map[string]*credentials.Integration{}, customers: map[string]bool{}}
	live := conns[:0]
	for _, c := range conns {
		err := r.check(ctx, &c.rights, now, memo)
		switch {
		case err == nil:
			live = append(live, c)
		case apperr.From(err).Status >= 500:
			r.log.Warn("room rights not checked", "error", err)
		default:
			c.closeFailed(err)
		}
	}
	scenes, err := r.scenes(ctx, live)
	if err != nil {
		r.log.Warn("room scenes not checked", "error", err)
		return
	}
	for _, c := range live {
		if sc := scenes[c.rights.sceneID]; sc == nil || !c.rights.opens(sc) {
			c.closeFailed(errSceneGone)
		}
	}
}

// scenes reads the scenes of conns' rooms, by id (absent: deleted).
func (r *Rooms) scenes(ctx context.Context, conns []*roomConn) (map[string]*ent.Scene, error) {
	var want []string
	for _, c := range conns {
		if !slices.Contains(want, c.rights.sceneID) {
			want = append(want, c.rights.sceneID)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, roomStoreWait)
	defer cancel()
	list, err := r.ent.Scene.Query().Where(scene.IDIn(want...)).
		Select(scene.FieldIntegrationID, scene.FieldOwnerID, scene.FieldVisibility, scene.FieldAllowEmbed, scene.FieldArchivedAt).
		All(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*ent.Scene, len(list))
	for _, sc := range list {
		out[sc.ID] = sc
	}
	return out, nil
}

// opens is the admission's scene rule now: a live scene of the integration, public and
// embeddable, or the session's customer's own.
func (rt *rights) opens(sc *ent.Scene) bool {
	return scenes.VisibleToEmbed(sc, rt.integrationID, rt.sub)
}

// savedReadAttempts bounds the reads of a saved scene before its notice is dropped.
const savedReadAttempts = 3

// saved turns the scene service's announcement of a save (roomproto.SceneSaved) into the
// {type:'saved'} frame of the room's local participants: the stored scene as the single-scene
// fetch shows it. A participant who may no longer open the scene (the save made it private, say)
// is closed instead. It reports whether ev is ready to deliver.
func (r *Rooms) saved(ctx context.Context, ev *roomEvent) bool {
	r.mu.Lock()
	var conns []*roomConn
	for c := range r.rooms[ev.Room] {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	if len(conns) == 0 {
		return false
	}
	// A saved notice is sent once: dropping it on one slow read would leave the other editors
	// showing unsaved changes for good, so the read is tried again before it is given up.
	var sc *ent.Scene
	var err error
	for attempt := 1; attempt <= savedReadAttempts; attempt++ {
		readCtx, cancel := context.WithTimeout(ctx, roomStoreWait)
		sc, err = loadScene(readCtx, r.ent, ev.Saved)
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		r.log.Warn("saved scene unreadable; reading it again", "scene", ev.Saved, "attempt", attempt, "error", err)
	}
	if err != nil {
		r.log.Warn("saved scene unreadable; the saved notice is dropped", "scene", ev.Saved, "error", err)
		return false
	}
	for _, c := range conns {
		if sc == nil || !c.rights.opens(sc) {
			c.closeFailed(errSceneGone)
		}
	}
	if sc == nil {
		return false
	}
	ev.Msg, err = json.Marshal(savedMsg{Type: "saved", Splat: scenes.DetailOf(r.urls, sc, conns[0].rights.productSlug, ""), Seq: ev.Seq})
	return err == nil
}
