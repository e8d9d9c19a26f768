package workflows

import (
	"context"
	"go.temporal.io/sdk/worker"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/workflows/contract"
)

// fakeActivities is the activities as the workflows know them (contract.Activities), for tests
// of a workflow alone: registered under the same names as the real ones (Temporal names a
// method by its name), every activity a test does not mock fails at once, non-retryably, so a
// workflow that calls one unexpectedly fails its test. The tests that run the workflows with
// the real activities live in internal/flowtest, since workflows may not import activities.
type fakeActivities struct{}

var _ contract.Activities = (*fakeActivities)(nil)

// notMocked is the failure of an activity the test did not mock.
func notMocked(name string) error {
	return temporal.NewNonRetryableApplicationError(name+" is not mocked in this test", "NotMocked", nil)
}

func (*fakeActivities) PrepareClone(context.Context, contract.PrepareCloneInput) (contract.PrepareCloneResult, error) {
	return contract.PrepareCloneResult{}, notMocked(contract.PrepareClone)
}

func (*fakeActivities) CopyCloneObjects(context.Context, contract.CopyCloneInput) (contract.CopyCloneResult, error) {
	return contract.CopyCloneResult{}, notMocked(contract.CopyCloneObjects)
}

func (*fakeActivities) FinalizeClone(context.Context, contract.FinalizeCloneInput) (contract.FinalizeCloneResult, error) {
	return contract.FinalizeCloneResult{}, notMocked(contract.FinalizeClone)
}

func (*fakeActivities) RollbackClone(context.Context, contract.RollbackCloneInput) (contract.RollbackCloneResult, error) {
	return contract.RollbackCloneResult{}, notMocked(contract.RollbackClone)
}

func (*fakeActivities) DeleteObjects(context.Context, contract.DeleteObjectsInput) (contract.DeleteObjectsResult, error) {
	return contract.DeleteObjectsResult{}, notMocked(contract.DeleteObjects)
}

func (*fakeActivities) LoadPurge(context.Context, contract.LoadPurgeInput) (contract.LoadPurgeResult, error) {
	return contract.LoadPurgeResult{}, notMocked(contract.LoadPurge)
}

func (*fakeActivities) ClosePurge(context.Context, contract.ClosePurgeInput) (contract.ClosePurgeResult, error) {
	return contract.ClosePurgeResult{}, notMocked(contract.ClosePurge)
}

func (*fakeActivities) PendingPurges(context.Context, contract.PendingPurgesInput) (contract.PendingPurgesResult, error) {
	return contract.PendingPurgesResult{}, notMocked(contract.PendingPurges)
}

func (*fakeActivities) ClaimUploads(context.Context, contract.ClaimUploadsInput) (contract.ClaimUploadsResult, error) {
	return contract.ClaimUploadsResult{}, notMocked(contract.ClaimUploads)
}

func (*fakeActivities) PrepareRendition(context.Context, contract.PrepareRenditionInput) (contract.PrepareRenditionResult, error) {
	return contract.PrepareRenditionResult{}, notMocked(contract.PrepareRendition)
}

func (*fakeActivities) ConvertRendition(context.Context, contract.ConvertRenditionInput) (contract.ConvertRenditionResult, error) {
	return contract.ConvertRenditionResult{}, notMocked(contract.ConvertRendition)
}

func (*fakeActivities) FinishRendition(context.Context, contract.FinishRenditionInput) (contract.FinishRenditionResult, error) {
	return contract.FinishRenditionResult{}, notMocked(contract.FinishRendition)
}

func (*fakeActivities) PendingRenditions(context.Context, contract.PendingRenditionsInput) (contract.PendingRenditionsResult, error) {
	return contract.PendingRenditionsResult{}, notMocked(contract.PendingRenditions)
}

func (*fakeActivities) DeleteOrphanRenditions(context.Context, contract.DeleteOrphanRenditionsInput) (contract.DeleteOrphanRenditionsResult, error) {
	return contract.DeleteOrphanRenditionsResult{}, notMocked(contract.DeleteOrphanRenditions)
}

func (*fakeActivities) PurgeArchivedScene(context.Context, contract.PurgeArchivedSceneInput) (contract.PurgeArchivedSceneResult, error) {
	return contract.PurgeArchivedSceneResult{}, notMocked(contract.PurgeArchivedScene)
}

func (*fakeActivities) ArchivedScenes(context.Context, contract.ArchivedScenesInput) (contract.ArchivedScenesResult, error) {
	return contract.ArchivedScenesResult{}, notMocked(contract.ArchivedScenes)
}

func (*fakeActivities) DeleteOrphanUploads(context.Context, contract.DeleteOrphanUploadsInput) (contract.DeleteOrphanUploadsResult, error) {
	return contract.DeleteOrphanUploadsResult{}, notMocked(contract.DeleteOrphanUploads)
}

func (*fakeActivities) DeleteStrayObjects(context.Context, contract.DeleteStrayObjectsInput) (contract.DeleteStrayObjectsResult, error) {
	return contract.DeleteStrayObjectsResult{}, notMocked(contract.DeleteStrayObjects)
}

func (*fakeActivities) DeleteViews(context.Context, contract.DeleteViewsInput) (contract.DeleteViewsResult, error) {
	return contract.DeleteViewsResult{}, notMocked(contract.DeleteViews)
}

func (*fakeActivities) DropExpiredViews(context.Context, contract.DropExpiredViewsInput) (contract.DropExpiredViewsResult, error) {
	return contract.DropExpiredViewsResult{}, notMocked(contract.DropExpiredViews)
}

func (*fakeActivities) DeleteOrphanViews(context.Context, contract.DeleteOrphanViewsInput) (contract.DeleteOrphanViewsResult, error) {
	return contract.DeleteOrphanViewsResult{}, notMocked(contract.DeleteOrphanViews)
}

func (*fakeActivities) CompactDeletedViews(context.Context, contract.CompactDeletedViewsInput) (contract.CompactDeletedViewsResult, error) {
	return contract.CompactDeletedViewsResult{}, notMocked(contract.CompactDeletedViews)
}

func (*fakeActivities) AttemptWebhookDelivery(context.Context, contract.AttemptWebhookInput) (contract.AttemptWebhookResult, error) {
	return contract.AttemptWebhookResult{}, notMocked(contract.AttemptWebhookDelivery)
}

func (*fakeActivities) PendingWebhookDeliveries(context.Context, contract.PendingWebhooksInput) (contract.PendingWebhooksResult, error) {
	return contract.PendingWebhooksResult{}, notMocked(contract.PendingWebhookDeliveries)
}

// slowMachine lets a workflow task run up to a minute before the test environment calls it a
// deadlock (the SDK's default is 1 s, which a CI machine under a CPU hog exceeded); a real
// deadlock still fails within the minute.
var slowMachine = worker.Options{DeadlockDetectionTimeout: time.Minute}
