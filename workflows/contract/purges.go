package contract

import (
	"time"
)

// LoadPurgeInput asks for the objects of an outbox row (asset_purges) from Offset on: its keys
// first, then its prefixes, counted as one list.
type LoadPurgeInput struct {
	PurgeID string
	Offset  int
	Limit   int
}

// LoadPurgeResult is one slice of a purge. Next is the offset of the following slice; Last says
// there is none. Closed says the row is already done (another run finished it), and nothing
// else is set then.
type LoadPurgeResult struct {
	Keys     []string
	Prefixes []string
	Next     int
	Last     bool
	Closed   bool
}

// ClosePurgeInput closes an outbox row: Deleted objects removed, or Failure when the purge
// gave up on input it can never process.
type ClosePurgeInput struct {
	PurgeID string
	Deleted int
	Failure string
}

// ClosePurgeResult says whether this call closed the row (false: it was already closed).
type ClosePurgeResult struct {
	Closed bool
}

// PendingPurgesInput asks for open outbox rows created more than MinAge ago (younger rows are
// still being started by the service that wrote them), oldest first, at most Limit.
type PendingPurgesInput struct {
	MinAge time.Duration
	Limit  int
}

// PendingPurge names one open outbox row, its kind (customer, scene or upload; "" in histories
// of before the kinds: customer), the customer it purges or whose scene or uploads it removes,
// and a scene purge's scene.
type PendingPurge struct {
	PurgeID       string
	IntegrationID string
	// OwnerID is the customer's record id (scenes.owner_id); its JSON key is its old
	// name, so recorded histories replay.
	OwnerID        string `json:"ExternalUserRecordID"`
	ExternalUserID string
	Kind           string
	SceneID        string
}

// PendingPurgesResult lists open rows.
type PendingPurgesResult struct {
	Purges []PendingPurge
}

// ClaimUploadsInput names the outbox row of a commit refused for quota.
type ClaimUploadsInput struct {
	PurgeID string
}

// ClaimUploadsResult counts the uploads claimed (their objects will go) and kept (another
// commit took them, or a scene names their objects). Closed says the row is already done.
type ClaimUploadsResult struct {
	Claimed int
	Kept    int
	Closed  bool
}
