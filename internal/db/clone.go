package db

import (
	"context"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
)

// CloneSourceOf applies the spec's rules for the scene a customer asks to clone: a live scene of
// the caller's integration (anything else is 404, never telling whether it exists); the
// customer's own scene is a Duplicate; another owner's public scene with allowClone true is a
// Remix; any other scene of another owner is 403. The owner edge is loaded (the remix names
// its owner). The scene API checks this before it starts a job, and the job checks it again
// when it reserves, since the source may change in between.
func CloneSourceOf(ctx context.Context, c *ent.Client, integrationID, ownerID, sceneID string) (src *ent.Scene, remix bool, err error) {
	src, err = c.Scene.Query().Where(scene.ID(sceneID), scene.IntegrationID(integrationID), scene.ArchivedAtIsNil()).
		WithOwner().Only(ctx)
	if ent.IsNotFound(err) {
		return nil, false, apperr.NotFound("splat not found")
	}
	if err != nil {
		return nil, false, err
	}
	switch {
	case src.OwnerID == ownerID:
		return src, false, nil
	case src.Visibility == scene.VisibilityPublic && src.AllowClone:
		return src, true, nil
	default:
		return nil, false, apperr.Forbidden("the owner does not allow this scene to be cloned")
	}
}
