package activities

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/quota"
	splathost "github.com/splathost/splathost/sdk/go"
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
	k, ok := objectkeys.Parse(src)
	if !ok || k.Integration != integrationID {
		return "", false
	}
	if k, ok = k.Source(); !ok {
		return "", false
	}
	return dst + k.Path(), true
}

// sourceFilesMissing is the spec's 409 for a source whose stored files are gone.
func sourceFilesMissing(detail string) error {
	return apperr.Conflict("source files missing from storage: "+detail).With("code", splathost.CodeSourceFilesMissing)
}

// PrepareClone checks the source again, plans the copy (every object of the scene: the file or
// the LOD folder, the images, and the assets levelData references, with levelData rewritten to
// the copies), verifies every source object is in the store (409 SOURCE_FILES_MISSING
// otherwise), and reserves the bytes from the customer and the account (413 otherwise) in one
// transaction with the job's row. A retry finds the row and answers from it, so the storage is
// reserved once.
func (a *Activities) PrepareClone(ctx context.Context, in contract.PrepareCloneInput) (contract.PrepareCloneResult, error) {
	if in.SplatID == "" || in.SourceSplatID == "" || in.IntegrationID == "" || in.AccountID == "" || in.OwnerID == "" {
		return contract.PrepareCloneResult{}, badInput("PrepareClone: job, source, integration, account and owner are required")
	}
	if job, err := a.Ent.CloneJob.Get(ctx, in.SplatID); err == nil {
		res := contract.PrepareCloneResult{Bytes: job.Bytes, TotalObjects: job.TotalObjects}
		if err := json.Unmarshal(job.Plan, &res.Plan); err != nil {
			return contract.PrepareCloneResult{}, fmt.Errorf("reading clone job %s's plan: %w", in.SplatID, err)
		}
		return res, nil
	} else if !ent.IsNotFound(err) {
		return contract.PrepareCloneResult{}, err
	}
	src, remix, err := db.CloneSourceOf(ctx, a.Ent, in.IntegrationID, in.OwnerID, in.SourceSplatID)
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
	if _, _, err := quota.Reserve(ctx, tx, in.OwnerID, in.AccountID, quota.Charge{Bytes: bytes}); err != nil {
		return contract.PrepareCloneResult{}, clientErrorOr(err)
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return contract.PrepareCloneResult{}, err
	}
	err = tx.CloneJob.Create().SetID(in.SplatID).SetIntegrationID(in.IntegrationID).SetOwnerID(in.OwnerID).
		SetAccountID(in.AccountID).SetSourceSplatID(src.ID).SetBytes(bytes).SetTotalObjects(total).
		SetDraft(draft).SetPlan(planJSON).Exec(ctx)
	if err != nil {
		return contract.PrepareCloneResult{}, fmt.Errorf("recording clone job %s: %w", in.SplatID, err)
	}
	if err := tx.Commit(); err != nil {
		return contract.PrepareCloneResult{}, fmt.Errorf("committing clone job %s: %w", in.SplatID, err)
	}
	return contract.PrepareCloneResult{Bytes: bytes, TotalObjects: total, Plan: plan}, nil
}

// assetRef is objectkeys.AssetRef with this deployment's bases.
func (a *Activities) assetRef(u string) (key string, render func(string) string, ok bool) {
	return objectkeys.AssetRef(a.AssetBase, a.PublicBase, u)
}
