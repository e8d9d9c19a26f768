package activities

import (
	"context"
	"fmt"
	"strings"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/workflows/contract"
)

// Clone limits.
const (
	// copySuffix marks a Duplicate's title (spec: title + ' (Copy)'); the title is shortened
	// first when the result would exceed the 200-character title limit.
	copySuffix = " (Copy)"
	maxTitle   = 200
	// maxLevelDataAssets bounds the assets a levelData may reference for copying, so one scene
	// cannot turn a clone into an unbounded job plan.
	maxLevelDataAssets = 1000
)

// cloneKey maps a source object key to its copy under dst (an objectkeys.CloneFolder). Keys of the scene key
// space look like i/<integration>/u/<customer>/<kind>/<ticket>/<rest>; the copy keeps
// <kind>/<ticket>/<rest>, which is unique within one scene, so the file, a LOD folder and the
// images of one scene never collide. A clone's own keys (…/clone/<job>/<kind>/<ticket>/<rest>)
// map the same way, so clones of clones do not grow their keys. A prefix (ending in a slash)
// maps to a prefix.
func cloneKey(src, integrationID, dst string) (string, bool) {
	parts := strings.Split(src, "/")
	if len(parts) < 7 || parts[0] != "i" || parts[1] != integrationID || parts[2] != "u" || parts[3] == "" {
		return "", false
	}
	rel := parts[4:]
	if rel[0] == "clone" {
		rel = rel[2:]
	}
	if len(rel) < 3 {
		return "", false
	}
	for i, s := range rel {
		// Only the last segment of a prefix may be empty (its trailing slash).
		if s == "." || s == ".." || (s == "" && i != len(rel)-1) {
			return "", false
		}
	}
	return dst + strings.Join(rel, "/"), true
}

// CloneSourceOf applies the spec's rules for the scene a customer asks to clone: a live scene of
// the caller's integration (anything else is 404, never telling whether it exists); the
// customer's own scene is a Duplicate; another owner's public scene with allowClone true is a
// Remix; any other scene of another owner is 403. The owner edge is loaded (the remix names
// its owner). The scene API checks this before it starts a job, and the job checks it again
// when it reserves, since the source may change in between.
func CloneSourceOf(ctx context.Context, c *ent.Client, integrationID, ownerRecordID, sceneID string) (src *ent.Scene, remix bool, err error) {
	src, err = c.Scene.Query().Where(scene.ID(sceneID), scene.IntegrationID(integrationID), scene.ArchivedAtIsNil()).
		WithOwner().Only(ctx)
	if ent.IsNotFound(err) {
		return nil, false, apperr.NotFound("splat not found")
	}
	if err != nil {
		return nil, false, err
	}
	switch {
	case src.OwnerID == ownerRecordID:
		return src, false, nil
	case src.Visibility == scene.VisibilityPublic && src.AllowClone:
		return src, true, nil
	default:
		return nil, false, apperr.Forbidden("the owner does not allow this scene to be cloned")
	}
}

// sourceFilesMissing is the spec's 409 for a source whose stored files are gone.
func sourceFilesMissing(detail string) error {
	return apperr.Conflict("source files missing from storage: "+detail).With("code", "SOURCE_FILES_MISSING")
}

// PrepareClone checks the source again, plans the copy (every object of the scene: the file or
// the LOD folder, the images, and the assets levelData references, with levelData rewritten to
// the copies), verifies every source object is in the store (409 SOURCE_FILES_MISSING
// otherwise), and reserves the bytes from the customer and the account (413 otherwise) in one
// transaction with the job's row. A retry finds the row and answers from it, so the storage is
// reserved once.
func (a *Activities) PrepareClone(ctx context.Context, in contract.PrepareCloneInput) (contract.PrepareCloneResult, error) {
	if in.JobID == "" || in.SourceSceneID == "" || in.IntegrationID == "" || in.AccountID == "" || in.OwnerRecordID == "" {
		return contract.PrepareCloneResult{}, badInput("PrepareClone: job, source, integration, account and owner are required")
	}
	if job, err := a.Ent.CloneJob.Get(ctx, in.JobID); err == nil {
		return contract.PrepareCloneResult{Bytes: job.Bytes, TotalObjects: job.TotalObjects, Plan: *job.Plan}, nil
	} else if !ent.IsNotFound(err) {
		return contract.PrepareCloneResult{}, err
	}
	src, remix, err := CloneSourceOf(ctx, a.Ent, in.IntegrationID, in.OwnerRecordID, in.SourceSceneID)
	if err != nil {
		return contract.PrepareCloneResult{}, clientErrorOr(err)
	}
	draft, plan, err := a.planClone(src, remix, in)
	if err != nil {
		return contract.PrepareCloneResult{}, clientErrorOr(err)
	}
	bytes, total, err := a.measure(ctx, src, &plan)
	if err != nil {
		return contract.PrepareCloneResult{}, clientErrorOr(err)
	}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return contract.PrepareCloneResult{}, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	// Lock order: customer, then account (quota.Reserve), as every writer of the counters.
	if _, _, err := quota.Reserve(ctx, tx, in.OwnerRecordID, in.AccountID, quota.Charge{Bytes: bytes}); err != nil {
		return contract.PrepareCloneResult{}, clientErrorOr(err)
	}
	err = tx.CloneJob.Create().SetID(in.JobID).SetIntegrationID(in.IntegrationID).SetOwnerID(in.OwnerRecordID).
		SetAccountID(in.AccountID).SetSourceSceneID(src.ID).SetBytes(bytes).SetTotalObjects(total).
		SetDraft(draft).SetPlan(&plan).Exec(ctx)
	if err != nil {
		return contract.PrepareCloneResult{}, fmt.Errorf("recording clone job %s: %w", in.JobID, err)
	}
	if err := tx.Commit(); err != nil {
		return contract.PrepareCloneResult{}, fmt.Errorf("committing clone job %s: %w", in.JobID, err)
	}
	return contract.PrepareCloneResult{Bytes: bytes, TotalObjects: total, Plan: plan}, nil
}

// assetRef reads an asset URL in any of the forms a scene may hold: the stored form
// (AssetBase/<key>, what uploads answer and records keep) or the service's asset route
// (PublicBase/assets/<key>, or /assets/s/<token>/<key>, which answers hand out and a levelData
// author may paste). render builds the URL of another key in the same form; a signed URL
// becomes the stable unsigned one, since its token covers only the source's folder.
func (a *Activities) assetRef(u string) (key string, render func(string) string, ok bool) {
	return AssetRef(a.AssetBase, a.PublicBase, u)
}

// AssetRef is assetRef for the given bases (assetBase: config.AssetBase, publicBase:
// config.PublicBase, may be empty). The scene service reads levelData's audio URL with it, so a
// save and a clone agree on which URLs name an object.
func AssetRef(assetBase, publicBase, u string) (key string, render func(string) string, ok bool) {
	if key, ok := strings.CutPrefix(u, assetBase+"/"); ok {
		return key, func(k string) string { return assetBase + "/" + k }, true
	}
	if publicBase == "" {
		return "", nil, false
	}
	rest, ok := strings.CutPrefix(u, publicBase+"/assets/")
	if !ok {
		return "", nil, false
	}
	if signed, ok := strings.CutPrefix(rest, "s/"); ok {
		if _, rest, ok = strings.Cut(signed, "/"); !ok {
			return "", nil, false
		}
	}
	return rest, func(k string) string { return publicBase + "/assets/" + k }, true
}
