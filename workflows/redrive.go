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

// RedriveResult counts the workflows a re-drive started, and those found already running
// under the same business id. Every re-drive answers with it.
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
	pending, err := pendingRows[contract.PendingPurgesResult](ctx, contract.PendingPurges,
		contract.PendingPurgesInput{MinAge: redriveMinAge, Limit: redriveLimit})
	if err != nil {
		return RedriveResult{}, err
	}
	// Rows of a scene DELETE or a refused commit run PurgeAssets. Histories of before those kinds
	// existed replay the customer purge for every row.
	kinds := workflow.GetVersion(ctx, purgeKindsChange, workflow.DefaultVersion, 1)
	return startAll(ctx, pending.Purges, func(p contract.PendingPurge) workflow.Future {
		if kinds != workflow.DefaultVersion && (p.Kind == PurgeKindScene || p.Kind == PurgeKindUpload) {
			in := AssetPurgeInput{PurgeID: p.PurgeID, Kind: p.Kind, IntegrationID: p.IntegrationID,
				ExternalUserID: p.ExternalUserID, SceneID: p.SceneID}
			return startAbandoned(ctx, workflow.ChildWorkflowOptions{WorkflowID: AssetPurgeWorkflowID(in),
				TypedSearchAttributes: assetPurgeSearchAttributes(in)}, PurgeAssets, in)
		}
		in := PurgeInput{PurgeID: p.PurgeID, IntegrationID: p.IntegrationID,
			OwnerID: p.OwnerID, ExternalUserID: p.ExternalUserID}
		return startAbandoned(ctx, workflow.ChildWorkflowOptions{WorkflowID: PurgeWorkflowID(in.IntegrationID, in.OwnerID),
			TypedSearchAttributes: purgeSearchAttributes(in)}, PurgeCustomerAssets, in)
	}, func(p contract.PendingPurge) []any { return []any{"purge", p.PurgeID} }), nil
}

// redrive is a re-drive whose start needs nothing but the rows: it reads them with the
// activity named activity (rows picks them out of its answer R) and starts them (startAll).
func redrive[R, P any](ctx workflow.Context, activity string, in any, rows func(R) []P,
	start func(P) workflow.Future, name func(P) []any,
) (RedriveResult, error) {
	pending, err := pendingRows[R](ctx, activity, in)
	if err != nil {
		return RedriveResult{}, err
	}
	return startAll(ctx, rows(pending), start, name), nil
}

// pendingRows runs a re-drive's read of its outbox: the activity named activity, on the
// database options, answering R.
func pendingRows[R any](ctx workflow.Context, activity string, in any) (R, error) {
	var rows R
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, dbOptions), activity, in).Get(ctx, &rows)
	return rows, err
}

// startAll is the skeleton every re-drive shares. It starts one child per row in one workflow
// task, then collects the outcomes (one round trip for the batch instead of one per row),
// counting the children started and those already running under the same business id; other
// failures are logged with what name gives for the row (the next re-drive tries again).
func startAll[P any](ctx workflow.Context, rows []P, start func(P) workflow.Future, name func(P) []any) RedriveResult {
	starts := make([]workflow.Future, len(rows))
	for i, p := range rows {
		starts[i] = start(p)
	}
	var res RedriveResult
	for i, f := range starts {
		err := f.Get(ctx, nil)
		switch {
		case temporal.IsWorkflowExecutionAlreadyStartedError(err):
			res.Running++
		case err != nil:
			workflow.GetLogger(ctx).Warn("re-drive: starting a workflow", append(name(rows[i]), "error", err)...)
		default:
			res.Started++
		}
	}
	return res
}

// startAbandoned starts wf as a child that outlives its parent (a re-drive ends long before
// the work it starts) and returns the future of the start alone; opts carries the business
// id, which makes a child already running an "already started" outcome, not a duplicate.
func startAbandoned(ctx workflow.Context, opts workflow.ChildWorkflowOptions, wf, in any) workflow.Future {
	opts.ParentClosePolicy = enumspb.PARENT_CLOSE_POLICY_ABANDON
	return workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), wf, in).GetChildWorkflowExecution()
}
