// Package scenerow sets the columns of a new scene row, once for the two ways a scene is born:
// a commit of uploads (services/scene) and a finished clone (activities.FinalizeClone). Both
// build the same row from what they hold, so a column added to scenes is set in one place and
// neither path can forget it.
package scenerow

import (
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/schema"
)

// New is what a new scene is made of. Optional columns are pointers or nil slices and maps: a
// nil one is left to its default, so a scene without a depth image or a camera stores NULL.
type New struct {
	// ID is the scene's id when the caller must know it before the insert (a rendition folder
	// or a clone's copies are named by it); empty lets the insert choose.
	ID            string
	IntegrationID string
	// OwnerID is the owning customer's record id (scenes.owner_id).
	OwnerID      string
	Title        string
	Description  string
	Visibility   scene.Visibility
	SplatType    string
	SplatURL     string
	LodFolderKey *string
	LodFiles     *int
	ImageURL     string
	// ThumbnailDepthURL is the depth image, nil when there is none.
	ThumbnailDepthURL     *string
	InitialCameraPosition []float64
	InitialCameraRotation []float64
	LevelData             map[string]any
	RemixedFrom           *schema.RemixedFrom
	// FileSizeBytes is what the scene is charged (its uploads or its copies).
	FileSizeBytes int64
	// AssetKeys are the single objects the scene owns.
	AssetKeys []string
	// RenditionPrefix, when set, plans the scene's rendition in the same transaction: the
	// folder it is built in, with processing_state pending as its outbox. It needs ID.
	RenditionPrefix string
	// RenditionQueue is the media task queue whose dispatcher starts the planned rendition
	// (empty: any dispatcher's).
	RenditionQueue string
	// ProcessingMessage, when set, says why a scene whose format could have a rendition gets
	// none.
	ProcessingMessage string
}

// Create returns the insert of n through scenes (a transaction's tx.Scene); the caller sets what
// only its path knows (the clone's flags, a commit's first publication) and saves it.
func Create(scenes *ent.SceneClient, n New) *ent.SceneCreate {
	c := scenes.Create().SetIntegrationID(n.IntegrationID).SetOwnerID(n.OwnerID).
		SetTitle(n.Title).SetDescription(n.Description).SetVisibility(n.Visibility).
		SetSplatType(scene.SplatType(n.SplatType)).SetSplatURL(n.SplatURL).
		SetNillableLodFolderKey(n.LodFolderKey).SetNillableLodFiles(n.LodFiles).SetImageURL(n.ImageURL).
		SetNillableThumbnailDepthURL(n.ThumbnailDepthURL).SetFileSizeBytes(n.FileSizeBytes).SetAssetKeys(n.AssetKeys)
	if n.ID != "" {
		c.SetID(n.ID)
	}
	if n.InitialCameraPosition != nil {
		c.SetInitialCameraPosition(n.InitialCameraPosition)
	}
	if n.InitialCameraRotation != nil {
		c.SetInitialCameraRotation(n.InitialCameraRotation)
	}
	if n.LevelData != nil {
		c.SetLevelData(n.LevelData)
	}
	if n.RemixedFrom != nil {
		c.SetRemixedFrom(n.RemixedFrom)
	}
	if n.RenditionPrefix != "" {
		c.SetProcessingState(scene.ProcessingStatePending).SetRenditionPrefix(n.RenditionPrefix)
		if n.RenditionQueue != "" {
			c.SetRenditionQueue(n.RenditionQueue)
		}
	}
	if n.ProcessingMessage != "" {
		c.SetProcessingMessage(n.ProcessingMessage)
	}
	return c
}
