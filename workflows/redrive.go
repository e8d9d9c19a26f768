package workflows

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// Schedules the worker keeps (created or updated idempotently on start).
const (
	// PurgeRedriveScheduleID runs RedrivePurges.
	PurgeRedriveScheduleID = "purge-redrive"
	// PurgeRedriveEvery is how often open outbox rows are re-driven.
	PurgeRedriveEvery = 10 * time.Minute
	// OrphanSweepScheduleID runs SweepOrphanUploads.
	OrphanSweepScheduleID = "orphan-sweep"
	// OrphanSweepEvery is how often uploads that never became a scene are swept.
	OrphanSweepEvery = 15 * time.Minute
)

// purgeKindsChange is the GetVersion change id of RedrivePurges starting PurgeAssets for scene
// and upload rows.
const purgeKindsChange = "purge-kinds"

// redriveMinAge leaves a fresh outbox row to the service that wrote it, which starts its
// workflow right after the commit.
const redriveMinAge = time.Minute

// redriveLimit bounds the rows one run re-drives; the next run takes the rest.
const redriveLimit = 200

// RedriveInput is empty: the outbox says what to do.
type RedriveInput struct{}

// RedriveResult counts the purges started, and those found already running.
type RedriveResult struct {
	Started int
	Running int
}

// RedrivePurges restarts the purge of every outbox row still open: the service crashed between
// its commit and the workflow start, Temporal was unreachable then, or a purge of the same
// customer was still running. Each purge starts as an abandoned child under the same business
// id the service uses, so a purge that is already running is found, not duplicated: customer
// rows run PurgeCustomerAssets, scene DELETE and refused-commit rows PurgeAssets.
func RedrivePurges(ctx workflow.Context, _ RedriveInput) (RedriveResult, error) {
	var pending contract.PendingPurgesResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, dbOptions), contract.PendingPurges,
		contract.PendingPurgesInput{MinAge: redriveMinAge, Limit: redriveLimit}).Get(ctx, &pending)
	if err != nil {
		return RedriveResult{}, err
	}
	// Rows of a scene DELETE or a refused commit run PurgeAssets. Histories of before those kinds
	// existed replay the customer purge for every row.
	kinds := workflow.GetVersion(ctx, purgeKindsChange, workflow.DefaultVersion, 1)
	// Start every child in one workflow task, then collect the outcomes: one round trip for the
	// batch instead of one per row.
	starts := make([]workflow.Future, len(pending.Purges))
	for i, p := range pending.Purges {
		if kinds != workflow.DefaultVersion && (p.Kind == PurgeKindScene || p.Kind == PurgeKindUpload) {
			in := AssetPurgeInput{PurgeID: p.PurgeID, Kind: p.Kind, IntegrationID: p.IntegrationID,
				ExternalUserID: p.ExternalUserID, SceneID: p.SceneID}
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
				WorkflowID:            AssetPurgeWorkflowID(in),
				ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
				TypedSearchAttributes: assetPurgeSearchAttributes(in),
			})
			starts[i] = workflow.ExecuteChildWorkflow(cctx, PurgeAssets, in).GetChildWorkflowExecution()
			continue
		}
		in := PurgeInput{PurgeID: p.PurgeID, IntegrationID: p.IntegrationID,
			OwnerID: p.OwnerID, ExternalUserID: p.ExternalUserID}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            PurgeWorkflowID(in.IntegrationID, in.OwnerID),
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
			TypedSearchAttributes: purgeSearchAttributes(in),
		})
		starts[i] = workflow.ExecuteChildWorkflow(cctx, PurgeCustomerAssets, in).GetChildWorkflowExecution()
	}
	started, running := awaitStarts(ctx, starts, func(i int) []any { return []any{"purge", pending.Purges[i].PurgeID} })
	return RedriveResult{Started: started, Running: running}, nil
}

// awaitStarts waits for the starts of a re-drive's abandoned children and counts those started
// and those already running (under the same business id); other failures are logged with
// what names the child (the next re-drive tries again).
func awaitStarts(ctx workflow.Context, starts []workflow.Future, names func(i int) []any) (started, running int) {
	for i, f := range starts {
		err := f.Get(ctx, nil)
		switch {
		case temporal.IsWorkflowExecutionAlreadyStartedError(err):
			running++
		case err != nil:
			workflow.GetLogger(ctx).Warn("re-drive: starting a workflow", append(names(i), "error", err)...)
		default:
			started++
		}
	}
	return started, running
}
