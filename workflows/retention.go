package workflows

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// Phases of a retention timer, as the "phase" query and the workflow's memo show them.
const (
	// PhaseGrace: within 14 days of the archiving.
	PhaseGrace = "grace"
	// PhaseDormancy: the 30 days after the grace.
	PhaseDormancy = "dormancy"
	// PhaseRemoving: the timer ran out and the removal runs.
	PhaseRemoving = "removing"
	// PhaseRemoved: the scene is gone.
	PhaseRemoved = "removed"
	// PhaseKept: the timer ran out but the scene was no longer eligible (restored, protected,
	// re-archived or already gone); nothing was removed.
	PhaseKept = "kept"
)

// PhaseQuery is the query that answers a RetentionPhase.
const PhaseQuery = "phase"

// RetentionPhase is where a retention timer stands and when its scene is (or was) due.
type RetentionPhase struct {
	Phase    string    `json:"phase"`
	RemoveAt time.Time `json:"removeAt"`
}

// RetentionResult is the outcome of a retention timer that ran out.
type RetentionResult struct {
	Removed bool
	Reason  string
}

// removeOptions run PurgeArchivedScene: it deletes the scene's objects (heartbeating per batch)
// before the row, and retries until it succeeds, however long the store is unavailable.
var removeOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Hour,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy:         retryForever,
}

// SceneRetention is the retention timer of one archiving of one scene (spec, Retained archive):
// 14 days of grace, then 30 days of dormancy, then the scene is removed permanently if it is
// still archived at the same time and unprotected. The durations come from ArchivedAt, so a
// timer started late (by the re-drive) still removes the scene 44 days after its archiving.
// A cancellation (restore, protection) ends the timer as canceled, having removed nothing.
// The phase is answered by the "phase" query and kept in the memo, where the Temporal UI shows
// it.
func SceneRetention(ctx workflow.Context, in RetentionInput) (RetentionResult, error) {
	if in.SceneID == "" || in.IntegrationID == "" || in.ArchivedAt.IsZero() {
		return RetentionResult{}, temporal.NewNonRetryableApplicationError("scene id, integration id and archived at are required", contract.ErrBadInput, nil)
	}
	graceEnd := in.ArchivedAt.Add(RetentionGrace)
	removeAt := graceEnd.Add(RetentionDormancy)
	state := RetentionPhase{RemoveAt: removeAt}
	if err := workflow.SetQueryHandler(ctx, PhaseQuery, func() (RetentionPhase, error) { return state, nil }); err != nil {
		return RetentionResult{}, err
	}
	enter := func(phase string) error {
		state.Phase = phase
		return workflow.UpsertMemo(ctx, map[string]interface{}{"phase": phase, "removeAt": removeAt})
	}

	for _, step := range []struct {
		phase string
		until time.Time
	}{{PhaseGrace, graceEnd}, {PhaseDormancy, removeAt}} {
		if err := enter(step.phase); err != nil {
			return RetentionResult{}, err
		}
		if d := step.until.Sub(workflow.Now(ctx)); d > 0 {
			if err := workflow.Sleep(ctx, d); err != nil {
				return RetentionResult{}, err // canceled: nothing removed
			}
		}
	}
	if err := enter(PhaseRemoving); err != nil {
		return RetentionResult{}, err
	}
	var res contract.PurgeArchivedSceneResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, removeOptions), contract.PurgeArchivedScene,
		contract.PurgeArchivedSceneInput{SceneID: in.SceneID, IntegrationID: in.IntegrationID, ArchivedAt: in.ArchivedAt}).Get(ctx, &res)
	if err != nil {
		return RetentionResult{}, err
	}
	phase := PhaseKept
	if res.Removed {
		phase = PhaseRemoved
	}
	if err := enter(phase); err != nil {
		return RetentionResult{}, err
	}
	return RetentionResult{Removed: res.Removed, Reason: res.Reason}, nil
}

// Retention re-drive: every unprotected archived scene must have a timer, even if the service
// crashed between archiving it and starting the timer.
const (
	// RetentionRedriveScheduleID runs RedriveRetention.
	RetentionRedriveScheduleID = "retention-redrive"
	// RetentionRedriveEvery is how often archived scenes are checked for a timer.
	RetentionRedriveEvery = time.Hour
)

// Bounds of one re-drive: scenes per page, and pages before the run continues as new (which
// keeps its history short).
const (
	retentionPage          = 200
	retentionPagesPerRun   = 20
	retentionRedriveMinAge = time.Minute
)

// RetentionRedriveInput carries the cursor across continue-as-new; a scheduled run starts at
// the beginning.
type RetentionRedriveInput struct {
	AfterArchivedAt time.Time
	AfterID         string
	Started         int
	Running         int
}

// RetentionRedriveResult counts the timers started, and those found running already.
type RetentionRedriveResult = RedriveResult

// retentionSearchAttributes are set on every retention timer, as StartSceneRetention does.
func retentionSearchAttributes(in RetentionInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(SAIntegrationID.ValueSet(in.IntegrationID),
		SAExternalUserID.ValueSet(in.ExternalUserID), SASplatID.ValueSet(in.SceneID))
}

// RedriveRetention walks every unprotected archived scene, a bounded page at a time, and starts
// its retention timer as an abandoned child under the same business id StartSceneRetention
// uses, so a running timer is found, not duplicated. A timer that completed is not started
// again (it removed the scene, or found it ineligible at its deadline); one that was canceled,
// failed or terminated is (ALLOW_DUPLICATE_FAILED_ONLY): a scene protected and unprotected
// again, under the same archiving, needs a timer again, and the new one still counts from
// ArchivedAt.
func RedriveRetention(ctx workflow.Context, in RetentionRedriveInput) (RetentionRedriveResult, error) {
	dbCtx := workflow.WithActivityOptions(ctx, sweepOptions)
	for page := 0; page < retentionPagesPerRun; page++ {
		var res contract.ArchivedScenesResult
		err := workflow.ExecuteActivity(dbCtx, contract.ArchivedScenes, contract.ArchivedScenesInput{MinAge: retentionRedriveMinAge,
			AfterArchivedAt: in.AfterArchivedAt, AfterID: in.AfterID, Limit: retentionPage}).Get(ctx, &res)
		if err != nil {
			return RetentionRedriveResult{Started: in.Started, Running: in.Running}, err
		}
		done := startAll(ctx, res.Scenes, func(s contract.ArchivedScene) workflow.Future {
			rin := RetentionInput{SceneID: s.SceneID, IntegrationID: s.IntegrationID,
				OwnerID: s.OwnerID, ExternalUserID: s.ExternalUserID, ArchivedAt: s.ArchivedAt}
			return startAbandoned(ctx, workflow.ChildWorkflowOptions{
				WorkflowID:            RetentionWorkflowID(rin.SceneID, rin.ArchivedAt),
				WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
				TypedSearchAttributes: retentionSearchAttributes(rin),
			}, SceneRetentionWorkflow, rin)
		}, func(s contract.ArchivedScene) []any { return []any{"scene", s.SceneID} })
		in.Started += done.Started
		in.Running += done.Running
		if n := len(res.Scenes); n > 0 {
			in.AfterArchivedAt, in.AfterID = res.Scenes[n-1].ArchivedAt, res.Scenes[n-1].SceneID
		}
		if res.Last {
			return RetentionRedriveResult{Started: in.Started, Running: in.Running}, nil
		}
	}
	return RetentionRedriveResult{}, workflow.NewContinueAsNewError(ctx, RedriveRetention, in)
}
