package contract

import (
	"time"
)

// PurgeArchivedSceneInput names one archiving of one scene: the removal happens only if the
// scene is still archived at exactly this time (to the microsecond, Postgres' precision).
type PurgeArchivedSceneInput struct {
	SceneID       string
	IntegrationID string
	ArchivedAt    time.Time
}

// PurgeArchivedSceneResult says whether the scene was removed, and if not, why.
type PurgeArchivedSceneResult struct {
	Removed bool
	Reason  string
}

// Reasons a retention timer left its scene alone.
const (
	RetentionKeptGone      = "scene no longer exists"
	RetentionKeptRestored  = "scene is not archived (restored)"
	RetentionKeptRearchive = "scene was archived again at another time"
	RetentionKeptProtected = "scene is protected"
)

// ArchivedScenesInput asks for a page of unprotected archived scenes archived more than MinAge
// ago (fresher ones are still being started by the service that archived them), in
// (archived_at, id) order after the cursor (AfterArchivedAt, AfterID; zero for the first page).
type ArchivedScenesInput struct {
	MinAge          time.Duration
	AfterArchivedAt time.Time
	AfterID         string
	Limit           int
}

// ArchivedScene is one archiving a retention timer must exist for.
type ArchivedScene struct {
	SceneID       string
	IntegrationID string
	// OwnerID is the customer's record id (scenes.owner_id); its JSON key is its old
	// name, so recorded histories replay.
	OwnerID        string `json:"ExternalUserRecordID"`
	ExternalUserID string
	ArchivedAt     time.Time
}

// ArchivedScenesResult is one page; Last says there is no next one.
type ArchivedScenesResult struct {
	Scenes []ArchivedScene
	Last   bool
}
