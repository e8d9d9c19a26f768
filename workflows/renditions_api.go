package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// RenditionWorkflowID is the business key of a scene's rendition: one at a time per scene; a
// finished one frees it for a retry.
func RenditionWorkflowID(sceneID string) string { return "renditions/" + sceneID }

// renditionSearchAttributes are set when a scene's rendition starts, by the service, an
// operator's retry, or as a child (the re-drive, a clone).
func renditionSearchAttributes(in RenditionInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(SAIntegrationID.ValueSet(in.IntegrationID),
		SAExternalUserID.ValueSet(in.ExternalUserID), SASplatID.ValueSet(in.SceneID),
		SARenditionPhase.ValueSet(RenditionPhasePreparing))
}

// StartSceneRenditions starts a scene's rendition on the media task queue. One already running
// for the scene is success (it has the work in hand).
func StartSceneRenditions(ctx context.Context, c client.Client, mediaTaskQueue string, in RenditionInput) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       RenditionWorkflowID(in.SceneID),
		TaskQueue:                mediaTaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Without it the SDK hands back the running one as if it were new.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    renditionSearchAttributes(in),
		StaticSummary:                            fmt.Sprintf("Rendition of scene %s", in.SceneID),
	}, SceneRenditionsWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}

// startRenditionChild starts a scene's rendition as an abandoned child under the scene's
// business id, on taskQueue (empty: the parent's), and returns the future of its start.
func startRenditionChild(ctx workflow.Context, in RenditionInput, taskQueue string) workflow.Future {
	return startAbandoned(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            RenditionWorkflowID(in.SceneID),
		TaskQueue:             taskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: renditionSearchAttributes(in),
	}, SceneRenditionsWorkflow, in)
}

// Schedule of the rendition re-drive (kept by the API worker, run on the media task queue).
const (
	// RenditionRedriveScheduleID runs RedriveRenditions.
	RenditionRedriveScheduleID = "rendition-redrive"
	// RenditionRedriveEvery is how often pending scenes are re-driven.
	RenditionRedriveEvery = 5 * time.Minute
)

// RenditionRedriveInput is empty: the scenes' processing_state says what to do.
type RenditionRedriveInput = RedriveInput

// RenditionRedriveResult counts the renditions started, and those found already running.
type RenditionRedriveResult = RedriveResult

// RedriveRenditions starts the rendition of every scene still pending a while after its commit:
// the service died between its commit and the start, Temporal was unreachable then, or the
// scene predates renditions (the migration marked those pending). Each starts as an abandoned
// child under the scene's business id, on this workflow's (the media) task queue, so one
// already running is found, not duplicated.
func RedriveRenditions(ctx workflow.Context, _ RenditionRedriveInput) (RenditionRedriveResult, error) {
	return redrive(ctx, contract.PendingRenditions, contract.PendingRenditionsInput{MinAge: redriveMinAge, Limit: redriveLimit},
		func(r contract.PendingRenditionsResult) []contract.PendingRendition { return r.Scenes },
		func(p contract.PendingRendition) workflow.Future {
			return startRenditionChild(ctx, RenditionInput{SceneID: p.SceneID, IntegrationID: p.IntegrationID, ExternalUserID: p.ExternalUserID}, "")
		}, func(p contract.PendingRendition) []any { return []any{"scene", p.SceneID} })
}
