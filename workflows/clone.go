package workflows

import (
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

// CloneSceneWorkflow is the registered name of the clone job workflow.
const CloneSceneWorkflow = "CloneScene"

// ClonePollSignal is the signal every poll of the job sends: a job nobody polls for
// AbandonAfter is abandoned and rolled back (spec, Clone job).
const ClonePollSignal = "poll"

// Phases of a clone job, as the memo ("phase") and the Temporal UI's current details show them.
const (
	ClonePhasePreparing   = "preparing"
	ClonePhaseCopying     = "copying"
	ClonePhaseFinalizing  = "finalizing"
	ClonePhaseSucceeded   = "succeeded"
	ClonePhaseRollingBack = "rolling back"
	ClonePhaseRolledBack  = "rolled back"
)

// cloneRenditionsChange is the GetVersion change id of a clone starting its rendition.
const cloneRenditionsChange = "clone-renditions"

// ErrCloneAbandoned is the failure of a job nobody polled for its AbandonAfter.
const ErrCloneAbandoned = "CLONE_ABANDONED"

// CloneInput is one clone job. SplatID is the id the new scene gets (and names the job's
// folder and its clone_jobs row); the API's jobId is the workflow run id, never this. The JSON
// keys of SplatID, SourceSplatID and OwnerID are their old names (JobID, SourceSceneID,
// OwnerRecordID), so the histories of jobs already recorded still read.
type CloneInput struct {
	SplatID        string `json:"JobID"`
	SourceSplatID  string `json:"SourceSceneID"`
	IntegrationID  string
	AccountID      string
	OwnerID        string `json:"OwnerRecordID"`
	ExternalUserID string
	ClonedAt       time.Time
	// AbandonAfter is how long the job runs without a poll before it is abandoned.
	AbandonAfter time.Duration
	// Concurrency is how many objects are copied at once.
	Concurrency int
	// MediaTaskQueue is where the clone's rendition runs; empty leaves it to the re-drive.
	MediaTaskQueue string
}

// CloneResult is a finished clone: the spec's 201 payload but the scene item, which the API
// renders fresh.
type CloneResult struct {
	SplatID       string
	SourceSplatID string
	Usage         contract.Usage
}

// Activity options of a clone job. Client errors (404, 403, 409, 413) are never retried; other
// failures are, a bounded number of times, after which the job fails and rolls back.
var (
	cloneRetry = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
		MaximumAttempts: 8, NonRetryableErrorTypes: []string{contract.ErrBadInput, contract.ErrClient}}
	prepareOptions = workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Minute, HeartbeatTimeout: time.Minute, RetryPolicy: cloneRetry}
	// The copy heartbeats after every object; a short heartbeat timeout lets polls see progress
	// every few seconds (the SDK sends at most one heartbeat per 0.8 × timeout) and lets a retry
	// take over soon after a worker dies. The attempt waits for its cancellation to be
	// acknowledged, so nothing is copied after the rollback.
	copyOptions = workflow.ActivityOptions{StartToCloseTimeout: 6 * time.Hour, HeartbeatTimeout: 5 * time.Second,
		WaitForCancellation: true, RetryPolicy: cloneRetry}
	finalizeOptions = workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: cloneRetry}
	// A rollback must finish however long the store or the database is unavailable.
	rollbackOptions = workflow.ActivityOptions{StartToCloseTimeout: time.Hour, HeartbeatTimeout: time.Minute, RetryPolicy: retryForever}
)

// CloneScene is a clone job (spec, Clone job): it reserves the clone's storage, copies every
// object inside the store with bounded concurrency, and creates the scene; any failure — a
// client error (the source vanished, quota), retries exhausted, a cancellation by an operator,
// or no poll for AbandonAfter while copying — rolls it back fully: the copies are deleted and
// the reservation released, and no scene is left. Progress shows in the memo (phase,
// totalObjects), the current details and the copy's heartbeat.
func CloneScene(ctx workflow.Context, in CloneInput) (CloneResult, error) {
	if in.SplatID == "" || in.SourceSplatID == "" || in.IntegrationID == "" || in.AccountID == "" ||
		in.OwnerID == "" || in.AbandonAfter <= 0 || in.Concurrency <= 0 {
		return CloneResult{}, temporal.NewNonRetryableApplicationError("clone input incomplete", contract.ErrBadInput, nil)
	}
	lastPoll := workflow.Now(ctx)
	polls := workflow.GetSignalChannel(ctx, ClonePollSignal)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			polls.Receive(ctx, nil)
			lastPoll = workflow.Now(ctx)
		}
	})
	total := 0
	phase := func(ctx workflow.Context, p string) {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** — clone of scene %s into %s (%d objects)", p, in.SourceSplatID, in.SplatID, total))
		// The memo is only for display; failing to write it must not fail the job.
		_ = workflow.UpsertMemo(ctx, map[string]any{"phase": p, "totalObjects": total})
	}
	rollback := func(cause error) (CloneResult, error) {
		// Disconnected: an operator's cancellation of the job must still roll it back.
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		phase(dctx, ClonePhaseRollingBack)
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, rollbackOptions), contract.RollbackClone,
			contract.RollbackCloneInput{SplatID: in.SplatID, IntegrationID: in.IntegrationID, OwnerID: in.OwnerID,
				SourceSplatID: in.SourceSplatID, Message: cloneFailureMessage(cause)}).Get(dctx, nil)
		if err != nil {
			return CloneResult{}, err
		}
		phase(dctx, ClonePhaseRolledBack)
		return CloneResult{}, cause
	}

	phase(ctx, ClonePhasePreparing)
	var prep contract.PrepareCloneResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, prepareOptions), contract.PrepareClone, contract.PrepareCloneInput{
		SplatID: in.SplatID, SourceSplatID: in.SourceSplatID, IntegrationID: in.IntegrationID, AccountID: in.AccountID,
		OwnerID: in.OwnerID, ClonedAt: in.ClonedAt,
	}).Get(ctx, &prep)
	if err != nil {
		return rollback(err)
	}

	total = prep.TotalObjects
	phase(ctx, ClonePhaseCopying)
	copyCtx, cancelCopy := workflow.WithCancel(workflow.WithActivityOptions(ctx, copyOptions))
	defer cancelCopy()
	copied := workflow.ExecuteActivity(copyCtx, contract.CopyCloneObjects, contract.CopyCloneInput{
		SplatID: in.SplatID, Prefix: objectkeys.CloneFolder(in.IntegrationID, in.OwnerID, in.SplatID),
		Plan: prep.Plan, TotalObjects: prep.TotalObjects, Concurrency: in.Concurrency,
	})
	abandoned := false
	for !abandoned && !copied.IsReady() {
		// One timer per abandonment window, not per poll: it fires when the job would be
		// abandoned had no poll come since, and a later poll only moves the next deadline.
		due := lastPoll.Add(in.AbandonAfter).Sub(workflow.Now(ctx))
		if due <= 0 {
			abandoned = true
			break
		}
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(copied, func(workflow.Future) {})
		sel.AddFuture(workflow.NewTimer(timerCtx, due), func(workflow.Future) {})
		sel.Select(ctx)
		cancelTimer()
	}
	if abandoned {
		cancelCopy()
	}
	err = copied.Get(ctx, nil)
	if abandoned {
		err = temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the clone job was abandoned: no poll for %s", in.AbandonAfter), contract.ErrClient, nil,
			contract.ClientErrorDetails{Status: http.StatusConflict, Message: "clone job abandoned (not polled) and rolled back",
				Extra: map[string]any{"code": ErrCloneAbandoned}})
	}
	if err != nil {
		return rollback(err)
	}

	phase(ctx, ClonePhaseFinalizing)
	var fin contract.FinalizeCloneResult
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, finalizeOptions), contract.FinalizeClone, contract.FinalizeCloneInput{
		SplatID: in.SplatID, OwnerID: in.OwnerID, AccountID: in.AccountID,
	}).Get(ctx, &fin)
	if err != nil {
		return rollback(err)
	}
	// The clone's rendition is re-derived (renditions are not copied): its workflow starts as
	// an abandoned child, so the clone's answer never waits for a conversion. A start that
	// fails is the rendition re-drive's to repeat.
	if workflow.GetVersion(ctx, cloneRenditionsChange, workflow.DefaultVersion, 1) == 1 &&
		fin.RenditionPending && in.MediaTaskQueue != "" {
		rin := RenditionInput{SceneID: fin.SplatID, IntegrationID: in.IntegrationID, ExternalUserID: in.ExternalUserID}
		if err := startRenditionChild(ctx, rin, in.MediaTaskQueue).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("starting the clone's rendition; the re-drive will", "scene", fin.SplatID, "error", err)
		}
	}
	phase(ctx, ClonePhaseSucceeded)
	return CloneResult{SplatID: fin.SplatID, SourceSplatID: in.SourceSplatID, Usage: fin.Usage}, nil
}

// cloneFailureMessage is the message of clone.failed: the client envelope's message when the
// failure is one (quota, source gone, abandoned), otherwise a neutral one (infrastructure
// details are for operators, in the workflow's history).
func cloneFailureMessage(cause error) string {
	if e := contract.ClientErrorOf(cause); e != nil {
		return e.Message
	}
	return contract.CloneFailedMessage
}
