package session

import (
	"context"
	"net/http"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/roomproto"
	"github.com/splathost/splathost/internal/scenes"
)

// The room's admission rules, below the handler (room_rights.go admitRoom): plain values in,
// an admission or the apperr to refuse the upgrade with out, so each rule is tested without a
// request or a database.

// joinRequest is a request to join a room: the verified session and what its token says beyond
// it (an inactive customer, its public key and expiry, the profile), and the ?splatId asked for.
type joinRequest struct {
	session          *session
	customerInactive bool
	publicKey        string
	expires          time.Time
	name, avatar     string
	splatID          string
	// sessionID names the token (httpx.SessionID): a guest's sockets count against it.
	sessionID string
}

// admit applies the admission rules: an editor session (4403 for a viewer), of an active
// customer when scoped (4403), opening a scene of its integration it may open in the editor:
// the customer's own, or a public embeddable one (4404, which never says whether the scene
// exists). The session may edit when it is scoped to the scene's owner or minted with coEdit for
// this scene (its splatId); any other is admitted read-only (presence and camera).
func (s *Service) admit(ctx context.Context, req joinRequest) (*admission, error) {
	if err := mayJoin(req); err != nil {
		return nil, err
	}
	if s.rooms.creds == nil {
		return nil, apperr.New(http.StatusServiceUnavailable, "the room cannot check rights: no credential cache wired")
	}
	id, err := roomSceneID(req.splatID)
	if err != nil {
		return nil, err
	}
	sc, err := s.db.Ent.Scene.Query().Where(scene.ID(id)).
		Select(scene.FieldIntegrationID, scene.FieldOwnerID, scene.FieldVisibility, scene.FieldAllowEmbed, scene.FieldArchivedAt).
		Only(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return nil, apperr.Internal(err)
	}
	if sc == nil || !req.session.sees(sc) {
		return nil, errNotFound()
	}
	return admissionOf(req, sc), nil
}

// mayJoin: the room is for editor sessions, and a scoped session's customer must be active.
func mayJoin(req joinRequest) error {
	if req.session.viewerOnly {
		return apperr.Forbidden("viewer sessions join no room: the room is for editor sessions")
	}
	if req.customerInactive {
		return apperr.CustomerInactive(http.StatusForbidden, "this customer is inactive: the session may view, not edit")
	}
	return nil
}

// roomSceneID reads ?splatId: required (400), and a 24-hex id (404 otherwise, as an id that
// names no scene; scenes.ParseID), lower-cased.
func roomSceneID(raw string) (string, error) {
	if raw == "" {
		return "", apperr.Invalid("missing splatId", "splatId: required")
	}
	return scenes.ParseID(raw)
}

// admissionOf is the admission of req to sc's room, once the session may see sc: it may edit
// when it is scoped to the scene's owner or minted with coEdit for sc (a coEdit grant is bound
// to the splatId it was minted with, never to other rooms the session may see). Its sockets count
// against its customer when scoped, else against the session itself.
func admissionOf(req joinRequest, sc *ent.Scene) *admission {
	ss := req.session
	adm := &admission{room: roomproto.Key(ss.integrationID, sc.ID), rights: rights{
		integrationID: ss.integrationID, publicKey: req.publicKey, productSlug: ss.productSlug, sceneID: sc.ID,
		expires: req.expires,
		canEdit: ss.coEdit && ss.splatID == sc.ID || ss.scoped && sc.OwnerID == ss.sub,
	}}
	switch {
	case ss.scoped:
		adm.rights.eu, adm.rights.sub = ss.eu, ss.sub
		adm.holder = "customer:" + ss.sub
	case req.sessionID != "":
		adm.holder = "session:" + req.sessionID
	}
	if req.name != "" {
		adm.name = shownName(req.name)
	}
	if req.avatar != "" {
		adm.avatar = &req.avatar
	}
	return adm
}
