package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// orphanMinAge is how long after expires_at an uncommitted upload is swept. The commit path
// accepts a commit until expires_at + 1 h (commitGrace in services/scene/commit.go); one more
// hour keeps a commit that passed that check clear of the sweep.
const orphanMinAge = 2 * time.Hour

// Bounds of one sweep run: tickets per batch, per activity call, and calls per run. What a run
// leaves, the next scheduled run takes.
const (
	sweepBatch    = 100
	sweepPerCall  = 2000
	sweepMaxCalls = 10
)

// sweepOptions: a sweep run is disposable (the schedule starts another), so it retries a few
// times and then lets the run fail rather than block the next ones.
var sweepOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Minute,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        5,
		NonRetryableErrorTypes: []string{contract.ErrBadInput},
	},
}

// SweepInput is empty: the sweep finds its own work.
type SweepInput struct{}

// SweepResult counts what the run removed: tickets, rendition folders of deleted scenes, and
// their objects.
type SweepResult struct {
	Tickets    int
	Renditions int
	Objects    int
}

// orphanRenditionLookback is how far back each run looks for rendition workflows that closed
// without completing: many runs of the schedule, so one that fails or is skipped loses nothing.
const orphanRenditionLookback = 24 * time.Hour

// SweepOrphanUploads removes uploads that never became a scene: objects of upload tickets never
// committed whose window closed more than two hours ago, and the tickets themselves; then what
// interrupted conversions left in the rendition folders of deleted scenes.
func SweepOrphanUploads(ctx workflow.Context, _ SweepInput) (SweepResult, error) {
	ctx = workflow.WithActivityOptions(ctx, sweepOptions)
	var out SweepResult
	for i := 0; i < sweepMaxCalls; i++ {
		var res contract.DeleteOrphanUploadsResult
		err := workflow.ExecuteActivity(ctx, contract.DeleteOrphanUploads, contract.DeleteOrphanUploadsInput{
			MinAge: orphanMinAge, BatchSize: sweepBatch, MaxTickets: sweepPerCall}).Get(ctx, &res)
		if err != nil {
			return out, err
		}
		out.Tickets += res.Tickets
		out.Objects += res.Objects
		if !res.More {
			break
		}
	}
	if workflow.GetVersion(ctx, "orphan-renditions", workflow.DefaultVersion, 1) == 1 {
		var res contract.DeleteOrphanRenditionsResult
		err := workflow.ExecuteActivity(ctx, contract.DeleteOrphanRenditions, contract.DeleteOrphanRenditionsInput{
			Within: orphanRenditionLookback}).Get(ctx, &res)
		if err != nil {
			return out, err
		}
		out.Renditions = res.Folders
		out.Objects += res.Objects
	}
	return out, nil
}
