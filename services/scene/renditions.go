package scene

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	entscene "github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/routes"
	splathost "github.com/splathost/splathost/sdk/go"
	"github.com/splathost/splathost/workflows"
)

// Operator routes of renditions (`splathostctl renditions list|retry`).
const (
	renditionsAdminPath  = routes.RenditionsAdmin
	maxRenditionsListing = 200
)

// renditionRowOf renders one scene's rendition as the operator API lists it, as the SDK's
// Rendition its clients decode.
func renditionRowOf(sc *ent.Scene) splathost.Rendition {
	r := splathost.Rendition{SplatID: sc.ID, IntegrationID: sc.IntegrationID, ExternalUserID: ownerEUOf(sc),
		State: string(sc.ProcessingState), Message: sc.ProcessingMessage, RenditionBytes: sc.RenditionBytes,
		Gaussians: sc.Gaussians, FileSizeBytes: sc.FileSizeBytes, WorkflowID: workflows.RenditionWorkflowID(sc.ID),
		CreatedAt: httpx.ISOTime(sc.CreatedAt)}
	if sc.RenditionType != nil {
		t := string(*sc.RenditionType)
		r.RenditionType = &t
	}
	return r
}

// listRenditions answers GET /admin/v1/renditions?state=&integrationId=&limit=: the newest
// scenes with a rendition in that state (default failed: what an operator looks for), of one
// integration or all.
func (s *Service) listRenditions(c *fiber.Ctx) error {
	var issues []string
	state := c.Query("state", string(entscene.ProcessingStateFailed))
	if entscene.ProcessingStateValidator(entscene.ProcessingState(state)) != nil {
		issues = append(issues, "state: must be one of 'pending', 'ready', 'failed', 'skipped'")
	}
	limit := 50
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxRenditionsListing {
			issues = append(issues, fmt.Sprintf("limit: must be an integer from 1 to %d", maxRenditionsListing))
		}
		limit = n
	}
	integ := c.Query("integrationId")
	if integ != "" && !ids.Valid(integ) {
		issues = append(issues, "integrationId: must be a 24-character id")
	}
	if len(issues) > 0 {
		return apperr.Invalid("invalid query", issues...)
	}
	rows, err := s.scenes.Renditions(c.UserContext(), entscene.ProcessingState(state), integ, limit)
	if err != nil {
		return err
	}
	out := make([]splathost.Rendition, 0, len(rows))
	for _, sc := range rows {
		out = append(out, renditionRowOf(sc))
	}
	return c.JSON(fiber.Map{"status": "success", "renditions": out})
}

// retryRendition answers POST /admin/v1/renditions/{splatId}/retry: the scene's rendition is
// built again (after a fix to the converter, or a failure of the infrastructure): pending again,
// not yet started, in one transaction; the dispatcher starts its workflow within a second or so. A scene whose upload has no rendition (a .sog,
// a LOD folder) is 409; an unknown or archived-and-purged scene 404.
func (s *Service) retryRendition(c *fiber.Ctx) error {
	id := c.Params("splatId")
	if !ids.Valid(id) {
		return errSceneNotFound()
	}
	ctx := c.UserContext()
	sc, err := s.scenes.RetryRendition(ctx, id)
	if err != nil {
		return err
	}
	// The media worker's dispatcher starts it (the scene is pending again, not yet started).
	s.invalidateScene(context.WithoutCancel(ctx), sc.IntegrationID, sc.ID)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"status": "success", "rendition": renditionRowOf(sc)})
}
