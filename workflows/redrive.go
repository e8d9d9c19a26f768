package workflows

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/activities"
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
// id the service uses, so a purge that is already running is found, not duplicated.
func RedrivePurges(ctx workflow.Context, _ RedriveInput) (RedriveResult, error) {
	var a *activities.Activities
	var pending activities.PendingPurgesResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, dbOptions), a.PendingPurges,
		activities.PendingPurgesInput{MinAge: redriveMinAge, Limit: redriveLimit}).Get(ctx, &pending)
	if err != nil {
		return RedriveResult{}, err
	}
	// Start every child in one workflow task, then collect the outcomes: one round trip for the
	// batch instead of one per row.
	starts := make([]workflow.Future, len(pending.Purges))
	for i, p := range pending.Purges {
		in := PurgeInput{PurgeID: p.PurgeID, IntegrationID: p.IntegrationID,
			ExternalUserRecordID: p.ExternalUserRecordID, ExternalUserID: p.ExternalUserID}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            PurgeWorkflowID(in.IntegrationID, in.ExternalUserRecordID),
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
			TypedSearchAttributes: purgeSearchAttributes(in),
		})
		starts[i] = workflow.ExecuteChildWorkflow(cctx, PurgeCustomerAssets, in).GetChildWorkflowExecution()
	}
	var out RedriveResult
	for i, f := range starts {
		err := f.Get(ctx, nil)
		switch {
		case temporal.IsWorkflowExecutionAlreadyStartedError(err):
			out.Running++
		case err != nil:
			workflow.GetLogger(ctx).Warn("re-driving a purge", "purge", pending.Purges[i].PurgeID, "error", err)
		default:
			out.Started++
		}
	}
	return out, nil
}
