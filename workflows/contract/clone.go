package contract

import (
	"time"
)

// PrepareCloneInput names one clone job: SplatID is the id the new scene will get (and its
// clone_jobs row's). In this file SplatID, SourceSplatID and OwnerID keep their old JSON keys
// (JobID, SourceSceneID, OwnerRecordID), so recorded histories still read.
type PrepareCloneInput struct {
	SplatID       string `json:"JobID"`
	SourceSplatID string `json:"SourceSceneID"`
	IntegrationID string
	AccountID     string
	OwnerID       string `json:"OwnerRecordID"`
	// ClonedAt is when the clone was asked for (the remix's clonedAt).
	ClonedAt time.Time
}

// PrepareCloneResult is the job's plan and what it reserved.
type PrepareCloneResult struct {
	Bytes        int64
	TotalObjects int
	Plan         ClonePlan
}

// CopyCloneInput is one job's copy: the plan PrepareClone made, the job's folder (Prefix) and
// how many copies run at once.
type CopyCloneInput struct {
	SplatID      string `json:"JobID"`
	Prefix       string
	Plan         ClonePlan
	TotalObjects int
	Concurrency  int
}

// CloneProgress is CopyCloneObjects' heartbeat, which the clone API reads to answer polls and
// the Temporal UI shows on the pending activity.
type CloneProgress struct {
	Copied int `json:"copied"`
	Total  int `json:"total"`
}

// CopyCloneResult counts what the copy did: Copied objects it copied in this attempt, Skipped
// objects an earlier attempt had copied already.
type CopyCloneResult struct {
	Copied  int
	Skipped int
}

// FinalizeCloneInput names the job whose copy is complete.
type FinalizeCloneInput struct {
	SplatID   string `json:"JobID"`
	OwnerID   string `json:"OwnerRecordID"`
	AccountID string
}

// FinalizeCloneResult is the new scene and the account storage meter after the clone.
type FinalizeCloneResult struct {
	SplatID string
	Usage   Usage
	// RenditionPending says the clone was created with a rendition to build.
	RenditionPending bool
}

// RollbackCloneInput names the job to undo; Message is why it failed, for clone.failed.
type RollbackCloneInput struct {
	SplatID       string `json:"JobID"`
	IntegrationID string
	OwnerID       string `json:"OwnerRecordID"`
	SourceSplatID string
	Message       string
}

// CloneFailedMessage is clone.failed's message when the failure is not the client's to read.
const CloneFailedMessage = "the clone failed and was rolled back"

// RollbackCloneResult says what the rollback undid.
type RollbackCloneResult struct {
	Deleted  int
	Released int64
}

// ObjectCopy is one object a clone copies, with the source's size.
type ObjectCopy struct {
	Src  string `json:"src"`
	Dst  string `json:"dst"`
	Size int64  `json:"size"`
}

// ClonePlan is what a clone copies: single objects (the scene file, images, levelData assets)
// and, for a LOD scene, a whole folder (listed when copied, never stored: it may hold 20 000
// objects).
type ClonePlan struct {
	Objects   []ObjectCopy `json:"objects,omitempty"`
	FolderSrc string       `json:"folderSrc,omitempty"`
	FolderDst string       `json:"folderDst,omitempty"`
	// FolderFiles and FolderBytes are what the folder must hold, when the source recorded its
	// file count at commit: the copy's own listing then checks the folder is whole, and the
	// plan needs no listing of its own. Zero: the plan listed the folder itself.
	FolderFiles int   `json:"folderFiles,omitempty"`
	FolderBytes int64 `json:"folderBytes,omitempty"`
}
