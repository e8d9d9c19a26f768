package workflows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// ViewRetentionDays is how long view data is kept (spec, Limits: usage rollups are kept 400
// days).
const ViewRetentionDays = 400

// ViewRetentionScheduleID is the schedule that drops expired view partitions.
const ViewRetentionScheduleID = "view-retention"

// ViewRetentionEvery is the schedule's interval: partitions are monthly, so daily is plenty and
// a missed day costs nothing.
const ViewRetentionEvery = 24 * time.Hour

// viewOptions: a view deletion must happen however long ClickHouse is unavailable, so it
// retries for ever, backing off to one attempt every five minutes.
var viewOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	RetryPolicy:         retryForever,
}

// DeleteViewsInput names the deleted scenes whose view records go.
type DeleteViewsInput struct {
	IntegrationID string
	SceneIDs      []string
}

// DeleteViewsResult is empty: the workflow ends when the records are gone.
type DeleteViewsResult struct{}

// DeleteSceneViews removes the view records of deleted scenes (a customer DELETE; a scene
// DELETE does it inside its PurgeAssets workflow), retrying until ClickHouse has accepted the deletion.
func DeleteSceneViews(ctx workflow.Context, in DeleteViewsInput) (DeleteViewsResult, error) {
	ctx = workflow.WithActivityOptions(ctx, viewOptions)
	err := workflow.ExecuteActivity(ctx, contract.DeleteViews, contract.DeleteViewsInput{SceneIDs: in.SceneIDs}).Get(ctx, nil)
	return DeleteViewsResult{}, err
}

// DeleteViewsWorkflowID is the business key of one deletion: the integration and a digest of
// its sorted scene ids, so a repeated start of the same deletion while one runs is refused as a
// duplicate rather than run twice.
func DeleteViewsWorkflowID(in DeleteViewsInput) string {
	ids := append([]string(nil), in.SceneIDs...)
	sort.Strings(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, ",")))
	return "delete-views/" + in.IntegrationID + "/" + hex.EncodeToString(sum[:12])
}

// ViewDeletions starts DeleteSceneViews workflows; the scene and user services hold one.
type ViewDeletions struct {
	Client    client.Client
	TaskQueue string
}

// Delete starts the deletion of the scenes' view records and returns once Temporal has it.
func (v ViewDeletions) Delete(ctx context.Context, integrationID string, sceneIDs []string) error {
	in := DeleteViewsInput{IntegrationID: integrationID, SceneIDs: sceneIDs}
	_, err := v.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: DeleteViewsWorkflowID(in), TaskQueue: v.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(SAIntegrationID.ValueSet(integrationID)),
	}, DeleteSceneViews, in)
	return err
}

// ViewRetentionInput is empty: the cutoff is the run's own time minus ViewRetentionDays.
type ViewRetentionInput struct{}

// ViewRetentionResult lists the dropped partitions ("table:YYYYMM"), counts the deleted
// scenes whose leftover records the sweep removed, and the deleted scenes whose rows the
// compaction removed.
type ViewRetentionResult struct {
	Dropped         []string
	OrphanScenes    int
	CompactedScenes int
}

// compactDeletedChange is the GetVersion change id of DropExpiredViews compacting the deleted
// scenes' rows after its sweep.
const compactDeletedChange = "compact-deleted-views"

// DropExpiredViews is the view-retention schedule's workflow: it drops every monthly partition
// of the view tables whose whole month is older than ViewRetentionDays, removes the records of
// scenes that no longer exist (the backstop of DeleteSceneViews), then removes the rows of
// every deleted scene in one batch (CompactDeletedViews: a mutation a day, not one per
// deletion).
func DropExpiredViews(ctx workflow.Context, _ ViewRetentionInput) (ViewRetentionResult, error) {
	ctx = workflow.WithActivityOptions(ctx, sweepOptions)
	cutoff := workflow.Now(ctx).UTC().AddDate(0, 0, -ViewRetentionDays)
	var dropped contract.DropExpiredViewsResult
	if err := workflow.ExecuteActivity(ctx, contract.DropExpiredViews, contract.DropExpiredViewsInput{Before: cutoff}).Get(ctx, &dropped); err != nil {
		return ViewRetentionResult{}, err
	}
	var orphans contract.DeleteOrphanViewsResult
	if err := workflow.ExecuteActivity(ctx, contract.DeleteOrphanViews, contract.DeleteOrphanViewsInput{}).Get(ctx, &orphans); err != nil {
		return ViewRetentionResult{Dropped: dropped.Dropped}, err
	}
	res := ViewRetentionResult{Dropped: dropped.Dropped, OrphanScenes: orphans.Scenes}
	if workflow.GetVersion(ctx, compactDeletedChange, workflow.DefaultVersion, 1) == 1 {
		var compacted contract.CompactDeletedViewsResult
		err := workflow.ExecuteActivity(ctx, contract.CompactDeletedViews, contract.CompactDeletedViewsInput{}).Get(ctx, &compacted)
		res.CompactedScenes = compacted.Scenes
		return res, err
	}
	return res, nil
}
