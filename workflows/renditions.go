package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// SceneRenditionsWorkflow is the registered name of SceneRenditions.
const SceneRenditionsWorkflow = "SceneRenditions"

// Phases of a rendition, as the renditionPhase search attribute, the memo and the current
// details show them in the Temporal UI.
const (
	RenditionPhasePreparing  = "preparing"
	RenditionPhaseConverting = "converting"
	RenditionPhaseRecording  = "recording"
	RenditionPhaseReady      = "ready"
	RenditionPhaseFailed     = "failed"
	RenditionPhaseSkipped    = "skipped"
)

// SARenditionPhase is where a rendition stands, so operators can list the converting or
// failed ones of an integration (with integrationId, externalUserId and splatId).
var SARenditionPhase = temporal.NewSearchAttributeKeyKeyword("renditionPhase")

// RenditionInput names the scene (and, for search attributes, its integration and owner).
type RenditionInput struct {
	SceneID        string
	IntegrationID  string
	ExternalUserID string
}

// RenditionResult is the outcome: State ready, failed or skipped, with the failure's or the
// skip's Message, and what was built.
type RenditionResult struct {
	State     string
	Message   string
	Type      string
	Bytes     int64
	Gaussians int64
	Poster    bool
}

// Activity options of a rendition. The conversion heartbeats every few seconds, so a lost
// worker is noticed within half a minute and another attempt starts (the activity is
// idempotent: same upload, same keys). The converter's own bounds (time, memory) stop a
// costly input; StartToClose only guards the activity as a whole. Input errors are never
// retried; anything else a few times.
var (
	convertRetry = &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		MaximumAttempts: 4, NonRetryableErrorTypes: []string{contract.ErrBadInput, contract.ErrRenditionInput}}
	convertOptions = workflow.ActivityOptions{StartToCloseTimeout: 3 * time.Hour, HeartbeatTimeout: 30 * time.Second,
		RetryPolicy: convertRetry}
)

// SceneRenditions builds a scene's rendition (contract item 15) on the media task queue:
// prepare (read the scene; skip when there is nothing to do), convert (download, convert with
// splat-transform, decimate levels for large scenes, render the poster, upload) and record the
// outcome on the scene. A .sog or a LOD folder without image gets its poster alone, and ends
// skipped with the poster as its image. A conversion that fails for good records `failed` with its message and
// fails the workflow, so operators see it red in the UI; the scene keeps serving its upload.
func SceneRenditions(ctx workflow.Context, in RenditionInput) (RenditionResult, error) {
	if in.SceneID == "" {
		return RenditionResult{}, temporal.NewNonRetryableApplicationError("rendition input without a scene", contract.ErrBadInput, nil)
	}
	phase := func(ctx workflow.Context, p, detail string) {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s**: rendition of scene %s%s", p, in.SceneID, detail))
		// Display only: failing to write them must not fail the rendition.
		_ = workflow.UpsertMemo(ctx, map[string]any{"phase": p})
		_ = workflow.UpsertTypedSearchAttributes(ctx, SARenditionPhase.ValueSet(p))
	}
	dbCtx := workflow.WithActivityOptions(ctx, dbOptions)

	phase(ctx, RenditionPhasePreparing, "")
	var prep contract.PrepareRenditionResult
	if err := workflow.ExecuteActivity(dbCtx, contract.PrepareRendition, contract.PrepareRenditionInput{SceneID: in.SceneID}).Get(ctx, &prep); err != nil {
		return RenditionResult{}, err
	}
	if prep.Skip {
		phase(ctx, RenditionPhaseSkipped, " ("+prep.Reason+")")
		return RenditionResult{State: RenditionPhaseSkipped, Message: prep.Reason}, nil
	}

	phase(ctx, RenditionPhaseConverting, " from "+prep.Format)
	var conv contract.ConvertRenditionResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, convertOptions), contract.ConvertRendition,
		contract.ConvertRenditionInput{SceneID: in.SceneID, RenditionSource: prep.RenditionSource}).Get(ctx, &conv)
	if err != nil {
		msg := renditionMessage(err)
		phase(ctx, RenditionPhaseRecording, "")
		rec := workflow.ExecuteActivity(dbCtx, contract.FinishRendition, contract.FinishRenditionInput{
			SceneID: in.SceneID, Folder: prep.Folder, State: RenditionPhaseFailed, Message: msg}).Get(ctx, nil)
		if rec != nil {
			return RenditionResult{}, rec
		}
		phase(ctx, RenditionPhaseFailed, ": "+msg)
		return RenditionResult{}, temporal.NewNonRetryableApplicationError(msg, contract.ErrRenditionInput, err)
	}

	phase(ctx, RenditionPhaseRecording, "")
	// A poster alone (a .sog or a LOD folder) leaves the scene skipped: it has no rendition.
	state := RenditionPhaseReady
	if prep.PosterOnly {
		state = RenditionPhaseSkipped
	}
	var fin contract.FinishRenditionResult
	if err := workflow.ExecuteActivity(dbCtx, contract.FinishRendition, contract.FinishRenditionInput{
		SceneID: in.SceneID, Folder: prep.Folder, State: state, Result: &conv}).Get(ctx, &fin); err != nil {
		return RenditionResult{}, err
	}
	if !fin.Recorded {
		phase(ctx, RenditionPhaseSkipped, " (the scene was deleted meanwhile)")
		return RenditionResult{State: RenditionPhaseSkipped, Message: "the scene was deleted"}, nil
	}
	if prep.PosterOnly {
		phase(ctx, RenditionPhaseSkipped, " (poster only: a "+prep.Format+" upload is already compact)")
		return RenditionResult{State: RenditionPhaseSkipped, Poster: conv.PosterKey != ""}, nil
	}
	phase(ctx, RenditionPhaseReady, fmt.Sprintf(" (%s, %d bytes, %d Gaussians)", conv.Type, conv.Bytes, conv.Gaussians))
	return RenditionResult{State: RenditionPhaseReady, Type: conv.Type, Bytes: conv.Bytes, Gaussians: conv.Gaussians,
		Poster: conv.PosterKey != ""}, nil
}

// renditionMessage is the owner-facing reason of a failed conversion: the input error's own
// message, or a generic one for infrastructure failures that outlasted the retries (their
// details stay in the workflow history for operators).
func renditionMessage(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Type() == contract.ErrRenditionInput {
		return ae.Message()
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return "the conversion timed out"
	}
	return "the conversion failed; an operator can retry it"
}
