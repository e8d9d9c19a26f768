package workflows

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// Kinds of outbox rows (asset_purges.kind): which workflow runs a row and what it does first.
const (
	// PurgeKindCustomer is a customer deletion, run by PurgeCustomerAssets.
	PurgeKindCustomer = "customer"
	// PurgeKindScene is a scene DELETE, run by PurgeAssets: objects, then view records.
	PurgeKindScene = "scene"
	// PurgeKindUpload is a commit refused for quota, run by PurgeAssets: it claims the uploads
	// still uncommitted, then removes their objects.
	PurgeKindUpload = "upload"
)

// AssetPurgeInput names the outbox row of a scene DELETE or of a refused commit. SceneID is the
// deleted scene (scene kind). Prepared, Offset and Deleted carry progress across
// continue-as-new; a new purge starts them at zero.
type AssetPurgeInput struct {
	PurgeID        string
	Kind           string
	IntegrationID  string
	ExternalUserID string
	SceneID        string
	Prepared       bool
	Offset         int
	Deleted        int
}

// AssetPurgeWorkflowID is the business key of a scene or upload purge: one per outbox row, so
// the service's start and the re-drive's never run the same row twice at once.
func AssetPurgeWorkflowID(in AssetPurgeInput) string {
	return "purge-" + in.Kind + "/" + in.IntegrationID + "/" + in.PurgeID
}

// assetPurgeSearchAttributes are set when a purge starts, by the service or by the re-drive.
func assetPurgeSearchAttributes(in AssetPurgeInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(SAIntegrationID.ValueSet(in.IntegrationID), SAExternalUserID.ValueSet(in.ExternalUserID))
}

// StartAssetPurge starts the PurgeAssets workflow of an outbox row. A run of the same row that
// is already going is returned instead (no error).
func StartAssetPurge(ctx context.Context, c client.Client, taskQueue string, in AssetPurgeInput) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    AssetPurgeWorkflowID(in),
		TaskQueue:             taskQueue,
		TypedSearchAttributes: assetPurgeSearchAttributes(in),
	}, PurgeAssets, in)
}

// PurgeAssets removes the stored objects an outbox row of a scene DELETE or a refused commit
// records, and closes the row:
//   - upload kind: first ClaimUploads, in one Postgres transaction, keeps every upload another
//     commit took (or a scene names) and deletes the ticket rows of the others, so no commit can
//     take them while their objects go; only the claimed uploads' objects are then deleted.
//   - scene kind: after the objects, the scene's view records (DeleteViews), so a ClickHouse
//     outage never holds the objects back; the row closes when both are gone.
//
// Every activity retries until it succeeds; input they can never process closes the row with
// the failure, as in PurgeCustomerAssets.
func PurgeAssets(ctx workflow.Context, in AssetPurgeInput) (PurgeResult, error) {
	if in.PurgeID == "" || in.IntegrationID == "" || (in.Kind != PurgeKindScene && in.Kind != PurgeKindUpload) {
		return PurgeResult{}, temporal.NewNonRetryableApplicationError("purge id, integration id and a scene or upload kind are required", contract.ErrBadInput, nil)
	}
	dbCtx := workflow.WithActivityOptions(ctx, dbOptions)
	if !in.Prepared && in.Kind == PurgeKindUpload {
		var claim contract.ClaimUploadsResult
		if err := workflow.ExecuteActivity(dbCtx, contract.ClaimUploads, contract.ClaimUploadsInput{PurgeID: in.PurgeID}).Get(ctx, &claim); err != nil {
			return closeFailed(dbCtx, in.PurgeID, in.Deleted, err)
		}
		if claim.Closed {
			return PurgeResult{Deleted: in.Deleted, AlreadyClosed: true}, nil
		}
	}
	in.Prepared = true
	again := func() error { return workflow.NewContinueAsNewError(ctx, PurgeAssets, in) }
	if end, res, err := purgeSlices(ctx, in.PurgeID, &in.Offset, &in.Deleted, again); end {
		return res, err
	}
	if in.Kind == PurgeKindScene && in.SceneID != "" {
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, viewOptions), contract.DeleteViews,
			contract.DeleteViewsInput{SceneIDs: []string{in.SceneID}}).Get(ctx, nil)
		if err != nil {
			return closeFailed(dbCtx, in.PurgeID, in.Deleted, err)
		}
	}
	return closePurge(dbCtx, in.PurgeID, in.Deleted)
}
