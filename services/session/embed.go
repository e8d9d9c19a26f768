package session

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/scenes"
)

// errNotFound is every "no such scene for this session": absent, archived, in another
// integration, private to someone else, or not the scene a viewer session is pinned to
// (scenes.ErrNotFound, the scene service's answer too).
var errNotFound = scenes.ErrNotFound

// mayOpen reports whether the session may see scene id at all before any lookup: a viewer
// session minted with a splatId loads only that scene (contract item 5).
func (ss *session) mayOpen(id string) bool {
	return !ss.viewerOnly || ss.splatID == "" || ss.splatID == id
}

// sees is the embed visibility rule (scenes.VisibleToEmbed): a live scene of the session's
// integration that is public and embeddable, or (for a session scoped to a customer) that
// customer's own.
func (ss *session) sees(sc *ent.Scene) bool {
	return scenes.VisibleToEmbed(sc, ss.integrationID, ss.ownerArg())
}

// sessionScene returns the request's session and the path's scene id, or the 401 of a request
// without a session and the 404 of an id the session may never open.
func sessionScene(c *fiber.Ctx) (*session, string, error) {
	ss, err := sessionCaller(httpx.CallerOf(c))
	if err != nil {
		return nil, "", err
	}
	id, err := scenes.ParseID(c.Params("splatId"))
	if err != nil {
		return nil, "", err
	}
	if !ss.mayOpen(id) {
		return nil, "", errNotFound()
	}
	return ss, id, nil
}

// getScene answers GET /api/embed/splats/{id} (session bearer): the scene as the single-scene
// fetch, when the session may see it; 404 otherwise, which discloses nothing.
func (s *Service) getScene(c *fiber.Ctx) error {
	ss, id, err := sessionScene(c)
	if err != nil {
		return err
	}
	sc, err := loadScene(c.UserContext(), s.db.Ent, id)
	if err != nil {
		return err
	}
	if sc == nil || !ss.sees(sc) {
		return errNotFound()
	}
	return c.JSON(fiber.Map{"status": "success", "splat": scenes.DetailOf(s.urls, sc, ss.productSlug, ss.eu)})
}

// loadScene reads a scene with its owner's external user id; nil when there is none.
func loadScene(ctx context.Context, client *ent.Client, id string) (*ent.Scene, error) {
	sc, err := client.Scene.Query().Where(scene.ID(id)).
		WithOwner(func(q *ent.ExternalUserQuery) { q.Select(externaluser.FieldExternalUserID) }).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return sc, nil
}
