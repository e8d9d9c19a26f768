package workflows

import (
	"context"
	"errors"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Retention of archived scenes (spec, Retained archive): an unprotected retained scene is removed
// permanently 44 days after archiving — a 14-day grace, then 30 days of dormancy.
const (
	RetentionGrace    = 14 * 24 * time.Hour
	RetentionDormancy = 30 * 24 * time.Hour
)

// SceneRetentionWorkflow is the registered name of the retention workflow, so that callers can
// start it without referring to its function.
const SceneRetentionWorkflow = "SceneRetention"

// SASplatID is the scene a workflow works on.
var SASplatID = temporal.NewSearchAttributeKeyKeyword("splatId")

// RetentionInput names one archived scene and when it was archived. The removal happens only if
// the scene is still archived at that same time and unprotected when the timer fires, so a
// restore, a protection or a later re-archive (a new ArchivedAt, hence a new workflow) makes a
// stale timer harmless even if its cancellation was lost.
type RetentionInput struct {
	SceneID       string
	IntegrationID string
	// OwnerID is the customer's record id (scenes.owner_id); its JSON key is its old
	// name, so recorded histories replay.
	OwnerID        string `json:"ExternalUserRecordID"`
	ExternalUserID string
	ArchivedAt     time.Time
}

// RetentionWorkflowID is the business key of one archiving of one scene.
func RetentionWorkflowID(sceneID string, archivedAt time.Time) string {
	return "retention/" + sceneID + "/" + strconv.FormatInt(archivedAt.UnixMilli(), 10)
}

// StartSceneRetention starts the retention timer of an archived scene. It is idempotent: a
// timer running or completed for this archiving is left as it is; a canceled one (the scene was
// protected or restored) may start again, like the re-drive does, since the removal re-checks.
func StartSceneRetention(ctx context.Context, c client.Client, taskQueue string, in RetentionInput) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       RetentionWorkflowID(in.SceneID, in.ArchivedAt),
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes: temporal.NewSearchAttributes(SAIntegrationID.ValueSet(in.IntegrationID),
			SAExternalUserID.ValueSet(in.ExternalUserID), SASplatID.ValueSet(in.SceneID)),
	}, SceneRetentionWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}

// CancelSceneRetention cancels the timer of one archiving (after a restore or a protection).
// A timer that is gone already is fine: the removal re-checks the scene anyway.
func CancelSceneRetention(ctx context.Context, c client.Client, sceneID string, archivedAt time.Time) error {
	err := c.CancelWorkflow(ctx, RetentionWorkflowID(sceneID, archivedAt), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}
