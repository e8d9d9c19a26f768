package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// orphanMinAge is how long after expires_at an uncommitted upload is swept. The commit path
// accepts a commit until expires_at + 1 h (commitGrace in services/scene/commit.go); ten more
// minutes keep a commit that passed that check (a request's budget is under a minute) clear of
// the sweep, and no longer: bytes that can no longer become a scene go within minutes.
const orphanMinAge = time.Hour + 10*time.Minute

// multipartIdle is how long a multipart upload, neither completed nor committed, keeps its
// ticket with no part arriving: its expiresAt is a day away (contract item 14), but an upload
// nobody feeds goes at the first sweep after an hour of silence, and its room with it.
const multipartIdle = time.Hour

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

// SweepInput: the sweep finds its own work. StrayMinAge is the bucket sweep's age guard (zero:
// strayMinAge); an operator or a test that wants strays gone now passes a shorter one.
type SweepInput struct {
	StrayMinAge time.Duration `json:",omitempty"`
}

// SweepResult counts what the run removed: tickets, rendition folders of deleted scenes, stray
// objects (the bucket sweep) and all their objects.
type SweepResult struct {
	Tickets    int
	Renditions int
	Strays     int `json:",omitempty"`
	Objects    int
}

// strayMinAge keeps the bucket sweep off objects written in the last minutes. Its rules read the
// database after the listing, so they hold for work in flight anyway; the age is a second guard.
const strayMinAge = 10 * time.Minute

// Bounds of the bucket sweep: listing pages (1 000 keys each) per activity call, and calls per
// run; a run that reaches the bound continues as new from where it stopped.
const (
	strayPagesPerCall = 50
	strayCallsPerRun  = 40
)

// orphanRenditionLookback is how far back each run looks for rendition workflows that closed
// without completing: many runs of the schedule, so one that fails or is skipped loses nothing.
const orphanRenditionLookback = 24 * time.Hour

// SweepOrphanUploads removes uploads that never became a scene: objects of upload tickets never
// committed whose window closed more than orphanMinAge ago, or multipart uploads idle for
// multipartIdle, and the tickets themselves; then what
// interrupted conversions left in the rendition folders of deleted scenes; then, the bucket
// sweep, every object that belongs to no scene and no open ticket (what a PUT to an upload URL
// recreated after a commit or a delete, among others).
func SweepOrphanUploads(ctx workflow.Context, in SweepInput) (SweepResult, error) {
	ctx = workflow.WithActivityOptions(ctx, sweepOptions)
	var out SweepResult
	for i := 0; i < sweepMaxCalls; i++ {
		var res contract.DeleteOrphanUploadsResult
		err := workflow.ExecuteActivity(ctx, contract.DeleteOrphanUploads, contract.DeleteOrphanUploadsInput{
			MinAge: orphanMinAge, BatchSize: sweepBatch, MaxTickets: sweepPerCall, MultipartIdle: multipartIdle}).Get(ctx, &res)
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
	if workflow.GetVersion(ctx, "stray-objects", workflow.DefaultVersion, 1) == 1 {
		n, err := sweepStrays(ctx, in.StrayMinAge)
		out.Strays = n
		out.Objects += n
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// sweepStrays runs the bucket sweep (activities.DeleteStrayObjects) over the whole scene key
// space, a bounded number of listing pages per call. A bucket too large for one run is finished
// by the next runs of the schedule: each run starts over, and removed objects are not listed
// again.
func sweepStrays(ctx workflow.Context, minAge time.Duration) (int, error) {
	if minAge <= 0 {
		minAge = strayMinAge
	}
	var deleted int
	after := ""
	for i := 0; i < strayCallsPerRun; i++ {
		var res contract.DeleteStrayObjectsResult
		err := workflow.ExecuteActivity(ctx, contract.DeleteStrayObjects, contract.DeleteStrayObjectsInput{
			After: after, Pages: strayPagesPerCall, MinAge: minAge}).Get(ctx, &res)
		deleted += res.Deleted
		if err != nil {
			return deleted, err
		}
		if after = res.Next; after == "" {
			break
		}
	}
	return deleted, nil
}
