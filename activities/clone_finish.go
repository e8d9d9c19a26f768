package activities

import (
	"context"
	"fmt"
	"net/http"

	"go.temporal.io/sdk/activity"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/clonejob"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/metrics"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/scenerow"
	"github.com/splathost/splathost/workflows/contract"
)

// FinalizeClone turns the job into its scene in one transaction: the scene row from the draft
// (private, unpublished, allowClone false, holding no scene slot until its first publish), the
// job row deleted — its reserved bytes stay charged, now to the scene. A retry after a lost
// answer finds the scene and answers the same. A job whose row is gone (its customer was
// deleted) fails with 404, and the workflow removes the copies.
func (a *Activities) FinalizeClone(ctx context.Context, in contract.FinalizeCloneInput) (contract.FinalizeCloneResult, error) {
	if in.SplatID == "" || in.OwnerID == "" || in.AccountID == "" {
		return contract.FinalizeCloneResult{}, badInput("FinalizeClone: job, owner and account are required")
	}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return contract.FinalizeCloneResult{}, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	// Lock order: customer, then the job row (as the customer deletion and RollbackClone).
	if _, err := tx.ExternalUser.Query().Where(externaluser.ID(in.OwnerID)).ForUpdate().Only(ctx); err != nil {
		return contract.FinalizeCloneResult{}, fmt.Errorf("locking customer %s: %w", in.OwnerID, err)
	}
	job, err := tx.CloneJob.Query().Where(clonejob.ID(in.SplatID)).ForUpdate().Only(ctx)
	if ent.IsNotFound(err) {
		if n, err := tx.Scene.Query().Where(scene.ID(in.SplatID)).Count(ctx); err != nil || n == 0 {
			if err != nil {
				return contract.FinalizeCloneResult{}, err
			}
			return contract.FinalizeCloneResult{}, clientError(apperr.CustomerNotProvisioned(http.StatusNotFound))
		}
		acct, err := tx.Account.Get(ctx, in.AccountID)
		if err != nil {
			return contract.FinalizeCloneResult{}, err
		}
		return contract.FinalizeCloneResult{SplatID: in.SplatID, Usage: contract.Usage(quota.AccountSnapshot(acct))}, nil
	}
	if err != nil {
		return contract.FinalizeCloneResult{}, fmt.Errorf("locking clone job %s: %w", in.SplatID, err)
	}
	acct, err := recheckClone(ctx, tx, job)
	if err != nil {
		return contract.FinalizeCloneResult{}, err
	}
	d := job.Draft
	rendition := d.Rendition
	row := scenerow.New{ID: job.ID, IntegrationID: job.IntegrationID, OwnerID: job.OwnerID, Title: d.Title,
		Description: d.Description, Visibility: scene.VisibilityPrivate, SplatType: d.SplatType, SplatURL: d.SplatURL,
		LodFolderKey: d.LodFolderKey, LodFiles: d.LodFiles, ImageURL: d.ImageURL, ThumbnailDepthURL: d.ThumbnailDepthURL,
		InitialCameraPosition: d.InitialCameraPosition, InitialCameraRotation: d.InitialCameraRotation,
		LevelData: d.LevelData, RemixedFrom: d.RemixedFrom, FileSizeBytes: job.Bytes, AssetKeys: d.AssetKeys}
	if rendition {
		row.RenditionPrefix = objectkeys.RenditionFolder(job.IntegrationID, job.OwnerID, job.ID)
	}
	create := scenerow.Create(tx.Scene, row).SetAllowEmbed(d.AllowEmbed).SetAllowComments(d.AllowComments).
		SetAllowReactions(d.AllowReactions).SetAllowClone(false).SetClonedFromID(job.SourceSplatID).SetHoldsSplatSlot(false)
	sc, err := create.Save(ctx)
	if err != nil {
		return contract.FinalizeCloneResult{}, fmt.Errorf("creating the clone %s: %w", job.ID, err)
	}
	if err := tx.CloneJob.DeleteOneID(job.ID).Exec(ctx); err != nil {
		return contract.FinalizeCloneResult{}, fmt.Errorf("closing clone job %s: %w", job.ID, err)
	}
	if err := db.NotifyScenesChanged(ctx, tx, job.IntegrationID, job.ID); err != nil {
		return contract.FinalizeCloneResult{}, err
	}
	var hooks events.Batch
	if err := a.Events.EmitSplat(ctx, tx, &hooks, events.SplatCreated, sc, ""); err != nil {
		return contract.FinalizeCloneResult{}, err
	}
	if err := a.Events.Emit(ctx, tx, &hooks, job.IntegrationID, events.CloneSucceeded, events.Value(events.CloneSucceededData{
		JobID: cloneJobID(ctx), SplatID: job.ID, SourceSplatID: job.SourceSplatID})); err != nil {
		return contract.FinalizeCloneResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return contract.FinalizeCloneResult{}, fmt.Errorf("committing the clone %s: %w", job.ID, err)
	}
	a.Events.Flush(ctx, &hooks)
	metrics.CloneJobs.WithLabelValues("succeeded").Inc()
	return contract.FinalizeCloneResult{SplatID: job.ID, Usage: contract.Usage(quota.AccountSnapshot(acct)), RenditionPending: rendition}, nil
}

// recheckClone applies the commit's rules once more, under the row locks, before a job becomes
// a scene: the copy can take minutes, and in that time the customer may have been deactivated,
// suspended or canceled, or had their caps (or the account's) lowered below what they hold. The
// reservation is given back and taken again through quota.Reserve, so the status and every cap
// are checked exactly as a commit checks them (same envelopes); a refusal is a client error and
// the workflow rolls the job back (copies deleted, reservation released). A customer whose
// billing state is not active is refused as well, even if an integrator set them active again:
// their scenes are in retained archive, and a clone must not land beside them. It returns the
// account after the charge (unchanged on success: the release and the charge cancel out).
func recheckClone(ctx context.Context, tx *ent.Tx, job *ent.CloneJob) (*ent.Account, error) {
	u, err := tx.ExternalUser.Query().Where(externaluser.ID(job.OwnerID)).Only(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading customer %s: %w", job.OwnerID, err)
	}
	if u.BillingState != externaluser.BillingStateActive {
		return nil, clientError(apperr.CustomerInactive(http.StatusUnauthorized, "external user is inactive or suspended"))
	}
	if err := quota.Release(ctx, tx, job.OwnerID, job.AccountID, quota.Charge{Bytes: job.Bytes}); err != nil {
		return nil, fmt.Errorf("re-checking clone job %s: %w", job.ID, err)
	}
	_, acct, err := quota.Reserve(ctx, tx, job.OwnerID, job.AccountID, quota.Charge{Bytes: job.Bytes})
	if err != nil {
		return nil, clientErrorOr(err)
	}
	return acct, nil
}

// cloneJobID is the clone job's public id (the API's jobId): its workflow run's id.
func cloneJobID(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	return activity.GetInfo(ctx).WorkflowExecution.RunID
}

// RollbackClone undoes a failed or abandoned job: every object in the job's folder goes (what
// the copy made, including anything copied after its last heartbeat), then the job row and its
// reservation, in one transaction. Deleting objects already gone is success and a missing row
// means the bytes were released already (or went with a deleted customer), so a retry is
// harmless. A job that became a scene is never undone.
func (a *Activities) RollbackClone(ctx context.Context, in contract.RollbackCloneInput) (contract.RollbackCloneResult, error) {
	if in.SplatID == "" || in.IntegrationID == "" || in.OwnerID == "" {
		return contract.RollbackCloneResult{}, badInput("RollbackClone: job, integration and owner are required")
	}
	if n, err := a.Ent.Scene.Query().Where(scene.ID(in.SplatID)).Count(ctx); err != nil || n > 0 {
		return contract.RollbackCloneResult{}, err
	}
	del, err := a.DeleteObjects(ctx, contract.DeleteObjectsInput{Prefixes: []string{objectkeys.CloneFolder(in.IntegrationID, in.OwnerID, in.SplatID)}})
	if err != nil {
		return contract.RollbackCloneResult{}, err
	}
	out := contract.RollbackCloneResult{Deleted: del.Deleted}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return out, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if _, err := tx.ExternalUser.Query().Where(externaluser.ID(in.OwnerID)).ForUpdate().Only(ctx); err != nil && !ent.IsNotFound(err) {
		return out, fmt.Errorf("locking customer %s: %w", in.OwnerID, err)
	}
	// clone.failed is recorded once per job (EmitOnce, keyed by the job), whichever attempt of
	// the rollback commits first.
	var hooks events.Batch
	failed := func(sourceSplatID string) error {
		msg := in.Message
		if msg == "" {
			msg = contract.CloneFailedMessage
		}
		jobID := cloneJobID(ctx)
		return a.Events.EmitOnce(ctx, tx, &hooks, "clone.failed/"+in.SplatID+"/"+jobID, in.IntegrationID, events.CloneFailed,
			events.Value(events.CloneFailedData{JobID: jobID, SourceSplatID: sourceSplatID, Message: msg}))
	}
	job, err := tx.CloneJob.Query().Where(clonejob.ID(in.SplatID)).ForUpdate().Only(ctx)
	if ent.IsNotFound(err) {
		// Nothing was reserved (the job failed before it could) or an earlier attempt
		// released it: the job is rolled back either way.
		if err := failed(in.SourceSplatID); err != nil {
			return out, err
		}
		if err := tx.Commit(); err != nil {
			return out, err
		}
		a.Events.Flush(ctx, &hooks)
		metrics.CloneJobs.WithLabelValues("rolled_back").Inc()
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("locking clone job %s: %w", in.SplatID, err)
	}
	if err := quota.Release(ctx, tx, job.OwnerID, job.AccountID, quota.Charge{Bytes: job.Bytes}); err != nil {
		return out, fmt.Errorf("releasing clone job %s: %w", in.SplatID, err)
	}
	if err := tx.CloneJob.DeleteOneID(job.ID).Exec(ctx); err != nil {
		return out, fmt.Errorf("deleting clone job %s: %w", in.SplatID, err)
	}
	if err := failed(job.SourceSplatID); err != nil {
		return out, err
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("committing the rollback of clone job %s: %w", in.SplatID, err)
	}
	a.Events.Flush(ctx, &hooks)
	out.Released = job.Bytes
	metrics.CloneJobs.WithLabelValues("rolled_back").Inc()
	return out, nil
}
