// Package workflows holds splathost's Temporal workflows: deterministic code only, every side
// effect lives in package activities. Workflows know the activities only by contract (package
// workflows/contract: names, inputs, results), so this package depends on no store and no HTTP
// framework (internal/arch). Workflow ids come from business keys.
package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register adds every workflow to w and reports how many it registered.
func Register(w worker.Registry) int {
	w.RegisterWorkflow(PurgeCustomerAssets)
	w.RegisterWorkflow(RedrivePurges)
	w.RegisterWorkflow(PurgeAssets)
	w.RegisterWorkflow(SweepOrphanUploads)
	w.RegisterWorkflowWithOptions(SceneRetention, workflow.RegisterOptions{Name: SceneRetentionWorkflow})
	w.RegisterWorkflow(RedriveRetention)
	w.RegisterWorkflowWithOptions(CloneScene, workflow.RegisterOptions{Name: CloneSceneWorkflow})
	w.RegisterWorkflow(DeleteSceneViews)
	w.RegisterWorkflow(DropExpiredViews)
	w.RegisterWorkflowWithOptions(WebhookDelivery, workflow.RegisterOptions{Name: WebhookDeliveryWorkflow})
	w.RegisterWorkflow(RedriveWebhooks)
	return 11
}

// RegisterMedia adds the media task queue's workflows to w (the media worker's): the renditions
// and their re-drive.
func RegisterMedia(w worker.Registry) int {
	w.RegisterWorkflowWithOptions(SceneRenditions, workflow.RegisterOptions{Name: SceneRenditionsWorkflow})
	w.RegisterWorkflow(RedriveRenditions)
	return 2
}
