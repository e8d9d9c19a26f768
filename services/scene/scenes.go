package scene

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/workflows"
)

// Scene metadata limits (spec, Limits), shared with the multiplayer room (internal/scenes).
const (
	maxTitle       = scenes.MaxTitle
	maxDescription = scenes.MaxDescription
)

// registerScenes mounts the scene read, update and delete routes.
func (s *Service) registerScenes(r fiber.Router) {
	r.Get("/api/v1/splats", s.listScenes)
	// Before /:splatId: otherwise "trending" is taken for a scene id (and answered 404).
	r.Get("/api/v1/splats/trending", s.trending)
	r.Get("/api/v1/splats/:splatId", s.getScene)
	r.Get("/api/v1/splats/:splatId/analytics", s.getAnalytics)
	r.Patch("/api/v1/splats/:splatId", s.patchScene)
	r.Delete("/api/v1/splats/:splatId", s.deleteScene)
}

// errSceneNotFound is every "no such scene for you" answer (scenes.ErrNotFound).
var errSceneNotFound = scenes.ErrNotFound

// customerScene is the prologue of the routes on one scene that act for a customer: the key
// caller with its EU (400 without), and the path's scene id (404 for a malformed one).
func customerScene(c *fiber.Ctx) (*httpx.Caller, string, string, error) {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return nil, "", "", err
	}
	id, err := SceneIDParam(c)
	if err != nil {
		return nil, "", "", err
	}
	return caller, eu, id, nil
}

// SceneIDParam returns the path's :splatId scene id, lower-cased; anything but 24 hex characters
// names no scene (404; scenes.ParseID).
func SceneIDParam(c *fiber.Ctx) (string, error) {
	return scenes.ParseID(c.Params("splatId"))
}

// callerEU is the EU header when the caller sent one.
func callerEU(caller *httpx.Caller) string {
	if caller.HasExternalUser {
		return caller.ExternalUserID
	}
	return ""
}

// getScene answers GET /api/v1/splats/{id}. Without EU the integration sees any of its live
// scenes; with EU only that customer's scenes and the integration's public ones.
func (s *Service) getScene(c *fiber.Ctx) error {
	caller, sc, err := s.visibleScene(c)
	if err != nil {
		return err
	}
	owner, eu := ownerEUOf(sc), callerEU(caller)
	return c.JSON(fiber.Map{"status": "success", "splat": s.detailOf(sc, owner, caller.ProductSlug, eu)})
}

// visibleScene is the caller and the path's scene, scoped as GET scene scopes it (visibleTo):
// any other scene is the 404 that never says more.
func (s *Service) visibleScene(c *fiber.Ctx) (*httpx.Caller, *ent.Scene, error) {
	caller, err := httpx.KeyCaller(c)
	if err != nil {
		return nil, nil, err
	}
	id, err := SceneIDParam(c)
	if err != nil {
		return nil, nil, err
	}
	sc, err := s.sceneByID(c.UserContext(), id)
	if err != nil {
		return nil, nil, apperr.Internal(err)
	}
	if !visibleTo(sc, caller) {
		return nil, nil, errSceneNotFound()
	}
	return caller, sc, nil
}

// visibleTo is GET scene's scoping, shared by the routes scoped like it (analytics): a live scene
// of the caller's integration, and with an EU, the EU's own or a public one. The row may come
// from the cache, shared by every caller: scoping is decided here, per request.
func visibleTo(sc *ent.Scene, caller *httpx.Caller) bool {
	if sc == nil || sc.IntegrationID != caller.IntegrationID || sc.ArchivedAt != nil {
		return false
	}
	return !caller.HasExternalUser || ownerEUOf(sc) == callerEU(caller) || sc.Visibility == scene.VisibilityPublic
}

// deleteScene answers DELETE /api/v1/splats/{id} with the spec's side effects: the record (1)
// and the release of its storage and slot (3) in one transaction with an outbox row
// (asset_purges, kind scene) of its view records (2) and stored assets (4), then its cache
// entries (5). The PurgeAssets workflow the row starts removes the objects (the file, images and
// the whole LOD folder) and the view records with retries; if this process dies or Temporal is
// unreachable before the start, the worker's purge re-drive starts it. So the answer never waits
// for the store, however large the folder. Retained (archived) scenes answer 404 like everywhere
// else in the API: the billing lifecycle owns them (their counters were released when they were
// archived).
func (s *Service) deleteScene(c *fiber.Ctx) error {
	call, err := s.customerOnScene(c, (*Service).sceneOwner)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	purge, err := s.scenes.Delete(ctx, call.caller.AccountID, call.owner, call.id)
	if err != nil {
		return err
	}
	s.startAssetPurge(ctx, purge)
	s.invalidateScene(context.WithoutCancel(ctx), call.caller.IntegrationID, call.id)
	return c.JSON(fiber.Map{"status": "success"})
}

// purgeStartTimeout bounds the start of a purge workflow after the commit. It runs detached
// from the request: the outbox row makes the start durable, so the answer does not wait for it.
const purgeStartTimeout = 30 * time.Second

// startAssetPurge starts the PurgeAssets workflow of an outbox row, detached from the request.
// A failure (or the process dying first) is only logged: the row stays open and the worker's
// purge re-drive starts it.
func (s *Service) startAssetPurge(ctx context.Context, p *ent.AssetPurge) {
	if p == nil {
		return
	}
	if s.clones.Client == nil {
		s.log.Info("no Temporal client; the purge re-drive will start the purge", "purge", p.ID)
		return
	}
	in := workflows.AssetPurgeInput{PurgeID: p.ID, Kind: string(p.Kind), IntegrationID: p.IntegrationID,
		ExternalUserID: p.ExternalUserID}
	if p.SceneID != nil {
		in.SceneID = *p.SceneID
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), purgeStartTimeout)
		defer cancel()
		if _, err := workflows.StartAssetPurge(ctx, s.clones.Client, s.clones.TaskQueue, in); err != nil {
			s.log.Warn("starting an asset purge; the re-drive will retry", "purge", p.ID, "error", err)
		}
	}()
}
