// Package contract is what workflows and the services that start them know of the activities:
// each activity's registered name, its input and result (their JSON is what Temporal records
// in histories, so it must stay byte-compatible with the recorded ones in workflows/testdata),
// the values those carry, the outcome constants and the application error types. It is a leaf:
// it pulls in no store (ent, pgx, S3) and no HTTP framework, so a workflow that imports it stays
// deterministic code, and package activities, which implements it, is free to use the stores.
package contract

// The registered activity names: package activities registers the exported methods of
// *activities.Activities, whose names these are; workflows call activities by them.
const (
	PrepareClone             = "PrepareClone"
	CopyCloneObjects         = "CopyCloneObjects"
	FinalizeClone            = "FinalizeClone"
	RollbackClone            = "RollbackClone"
	DeleteObjects            = "DeleteObjects"
	LoadPurge                = "LoadPurge"
	ClosePurge               = "ClosePurge"
	PendingPurges            = "PendingPurges"
	ClaimUploads             = "ClaimUploads"
	PrepareRendition         = "PrepareRendition"
	ConvertRendition         = "ConvertRendition"
	FinishRendition          = "FinishRendition"
	PendingRenditions        = "PendingRenditions"
	DeleteOrphanRenditions   = "DeleteOrphanRenditions"
	PurgeArchivedScene       = "PurgeArchivedScene"
	ArchivedScenes           = "ArchivedScenes"
	DeleteOrphanUploads      = "DeleteOrphanUploads"
	DeleteStrayObjects       = "DeleteStrayObjects"
	DeleteViews              = "DeleteViews"
	DropExpiredViews         = "DropExpiredViews"
	DeleteOrphanViews        = "DeleteOrphanViews"
	CompactDeletedViews      = "CompactDeletedViews"
	AttemptWebhookDelivery   = "AttemptWebhookDelivery"
	PendingWebhookDeliveries = "PendingWebhookDeliveries"
)

// Usage is the interface's usage snapshot ({ usedBytes, limitBytes, remainingBytes,
// percentUsed }) as a clone's result carries it. It has quota.Snapshot's fields, so each
// converts to the other; it is declared here because package quota reads the store and
// workflows must not depend on it.
type Usage struct {
	UsedBytes      int64   `json:"usedBytes"`
	LimitBytes     int64   `json:"limitBytes"`
	RemainingBytes int64   `json:"remainingBytes"`
	PercentUsed    float64 `json:"percentUsed"`
}
