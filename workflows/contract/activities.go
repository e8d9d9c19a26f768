package contract

import "context"

// Activities is every activity as the workflows call it: the registered names above with their
// inputs and results. *activities.Activities implements it (checked where it is declared), and
// the workflows' tests register a fake of it, so both sides agree on each activity's signature,
// not only on its name, without either package importing the other.
type Activities interface {
	PrepareClone(context.Context, PrepareCloneInput) (PrepareCloneResult, error)
	CopyCloneObjects(context.Context, CopyCloneInput) (CopyCloneResult, error)
	FinalizeClone(context.Context, FinalizeCloneInput) (FinalizeCloneResult, error)
	RollbackClone(context.Context, RollbackCloneInput) (RollbackCloneResult, error)
	DeleteObjects(context.Context, DeleteObjectsInput) (DeleteObjectsResult, error)
	LoadPurge(context.Context, LoadPurgeInput) (LoadPurgeResult, error)
	ClosePurge(context.Context, ClosePurgeInput) (ClosePurgeResult, error)
	PendingPurges(context.Context, PendingPurgesInput) (PendingPurgesResult, error)
	ClaimUploads(context.Context, ClaimUploadsInput) (ClaimUploadsResult, error)
	PrepareRendition(context.Context, PrepareRenditionInput) (PrepareRenditionResult, error)
	ConvertRendition(context.Context, ConvertRenditionInput) (ConvertRenditionResult, error)
	FinishRendition(context.Context, FinishRenditionInput) (FinishRenditionResult, error)
	PendingRenditions(context.Context, PendingRenditionsInput) (PendingRenditionsResult, error)
	DeleteOrphanRenditions(context.Context, DeleteOrphanRenditionsInput) (DeleteOrphanRenditionsResult, error)
	PurgeArchivedScene(context.Context, PurgeArchivedSceneInput) (PurgeArchivedSceneResult, error)
	ArchivedScenes(context.Context, ArchivedScenesInput) (ArchivedScenesResult, error)
	DeleteOrphanUploads(context.Context, DeleteOrphanUploadsInput) (DeleteOrphanUploadsResult, error)
	DeleteStrayObjects(context.Context, DeleteStrayObjectsInput) (DeleteStrayObjectsResult, error)
	DeleteViews(context.Context, DeleteViewsInput) (DeleteViewsResult, error)
	DropExpiredViews(context.Context, DropExpiredViewsInput) (DropExpiredViewsResult, error)
	DeleteOrphanViews(context.Context, DeleteOrphanViewsInput) (DeleteOrphanViewsResult, error)
	CompactDeletedViews(context.Context, CompactDeletedViewsInput) (CompactDeletedViewsResult, error)
	AttemptWebhookDelivery(context.Context, AttemptWebhookInput) (AttemptWebhookResult, error)
	PendingWebhookDeliveries(context.Context, PendingWebhooksInput) (PendingWebhooksResult, error)
}
