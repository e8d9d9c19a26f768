package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/splathost/splathost/ent/assetpurge"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

// WorkflowLister lists workflow executions from Temporal's visibility store (client.Client is
// one).
type WorkflowLister interface {
	ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
}

// renditionWorkflowPrefix is workflows.RenditionWorkflowID's ("renditions/<scene id>"):
// activities cannot import workflows.
const renditionWorkflowPrefix = "renditions/"

// DeleteOrphanRenditions empties the rendition folders that nothing else will. A conversion
// uploads before it records, and its recording step removes what it wrote when the scene was
// deleted meanwhile; a rendition workflow that never reaches that step (terminated by an
// operator, timed out) can leave objects in the folder of a scene whose purge already ran. Such
// workflows are few and Temporal lists them: for each one closed within the lookback whose scene
// no longer exists, the folder is emptied under every record id its customer had (the scene's
// purge row names it; a deleted customer's purge rows, or the live customer, name the others).
// A scene that still exists owns its folder, and the re-drive converts it again while pending.
// Emptying a folder is idempotent, so the overlapping lookbacks of successive runs cost only a
// list call.
func (a *Activities) DeleteOrphanRenditions(ctx context.Context, in contract.DeleteOrphanRenditionsInput) (contract.DeleteOrphanRenditionsResult, error) {
	var out contract.DeleteOrphanRenditionsResult
	if in.Within <= 0 {
		return out, badInput("DeleteOrphanRenditions: the lookback must be positive")
	}
	if a.Workflows == nil {
		return out, badInput("DeleteOrphanRenditions: this worker has no Temporal client")
	}
	query := fmt.Sprintf(`WorkflowType = 'SceneRenditions' AND ExecutionStatus != 'Running' AND ExecutionStatus != 'Completed' AND CloseTime > "%s"`,
		time.Now().Add(-in.Within).UTC().Format(time.RFC3339))
	var token []byte
	for {
		res, err := a.Workflows.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: query, PageSize: 100, NextPageToken: token})
		if err != nil {
			return out, err
		}
		for _, ex := range res.GetExecutions() {
			sceneID, ok := strings.CutPrefix(ex.GetExecution().GetWorkflowId(), renditionWorkflowPrefix)
			if !ok || sceneID == "" {
				continue
			}
			out.Checked++
			fields := ex.GetSearchAttributes().GetIndexedFields()
			var integrationID, externalUserID string
			_ = converter.GetDefaultDataConverter().FromPayload(fields["integrationId"], &integrationID)
			_ = converter.GetDefaultDataConverter().FromPayload(fields["externalUserId"], &externalUserID)
			n, err := a.emptyOrphanRendition(ctx, integrationID, externalUserID, sceneID)
			if err != nil {
				return out, err
			}
			if n >= 0 {
				out.Folders++
				out.Objects += n
			}
			activity.RecordHeartbeat(ctx, out)
		}
		if token = res.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// emptyOrphanRendition empties the rendition folders sceneID may have had, when the scene is
// gone; it returns how many objects went, or -1 when the scene still exists.
func (a *Activities) emptyOrphanRendition(ctx context.Context, integrationID, externalUserID, sceneID string) (int, error) {
	exists, err := a.Ent.Scene.Query().Where(scene.ID(sceneID)).Exist(ctx)
	if err != nil || exists {
		return -1, err
	}
	owners := map[string]bool{}
	purges, err := a.Ent.AssetPurge.Query().Where(assetpurge.Or(
		assetpurge.SceneID(sceneID),
		assetpurge.And(assetpurge.IntegrationID(integrationID), assetpurge.ExternalUserID(externalUserID)),
	)).Select(assetpurge.FieldIntegrationID, assetpurge.FieldOwnerID).All(ctx)
	if err != nil {
		return 0, err
	}
	for _, p := range purges {
		if p.IntegrationID == integrationID || integrationID == "" {
			integrationID = p.IntegrationID
			owners[p.OwnerID] = true
		}
	}
	live, err := a.Ent.ExternalUser.Query().Where(externaluser.IntegrationID(integrationID),
		externaluser.ExternalUserID(externalUserID)).IDs(ctx)
	if err != nil {
		return 0, err
	}
	for _, id := range live {
		owners[id] = true
	}
	n := 0
	for owner := range owners {
		folder := objectkeys.RenditionFolder(integrationID, owner, sceneID)
		if !objectkeys.SafePrefix(folder) {
			continue
		}
		if err := a.bucket().EmptyPrefix(ctx, folder, func(k int) { n += k }); err != nil {
			return n, err
		}
	}
	return n, nil
}
