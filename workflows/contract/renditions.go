package contract

import (
	"path"
	"strings"
	"time"
)

// ErrRenditionInput is the application error type of a scene the converter cannot or may not
// convert (corrupt, hostile, or beyond the deployment's bounds): never retried, the rendition
// fails with its message and the scene keeps serving its upload.
const ErrRenditionInput = "RenditionInput"

// PrepareRenditionInput names the scene.
type PrepareRenditionInput struct {
	SceneID string
}

// PrepareRenditionResult is what the conversion needs, or why there is none.
type PrepareRenditionResult struct {
	// Skip is set when there is nothing to do: the scene is gone, not pending (another run
	// finished it), or of a format without a rendition. Reason says which.
	Skip   bool
	Reason string
	RenditionSource
}

// RenditionSource is what a conversion reads and where it writes.
type RenditionSource struct {
	// SourceKey is the upload's object key and Format its extension; Folder the scene's
	// rendition folder.
	SourceKey string
	Format    string
	Folder    string
	// SourceBytes is the upload's size, which picks the conversion's lane (0, from a rendition
	// started before lanes: the large lane).
	SourceBytes int64
	// Poster asks for a poster: the scene has no image.
	Poster bool
	// PosterOnly is set for an upload that gets no rendition but a poster (PosterFormat):
	// Format is then ".sog" (SourceKey the .sog) or "lod" (SourceKey the lod-meta.json).
	PosterOnly bool
	// The levelData view the poster is rendered with (nil: the viewer's defaults).
	Orientation *[3]float64
	Camera      *Camera
	Background  *[3]uint8
}

// Lane is a conversion lane of the media worker: small scenes convert in slots of their own, so a
// thumbnail-size scene never queues behind a large scan (docs/guides/renditions.md#lanes).
type Lane string

// The two lanes.
const (
	LaneSmall Lane = "small"
	LaneLarge Lane = "large"
)

// Lanes says which lane a scene converts in: uploads of at most SmallBytes are small.
type Lanes struct {
	SmallBytes int64
}

// Of is the lane of an upload of size bytes; an unknown size (0) is large, so a scene whose
// size was not recorded can never hold a small scene's slot for long.
func (l Lanes) Of(bytes int64) Lane {
	if bytes > 0 && bytes <= l.SmallBytes {
		return LaneSmall
	}
	return LaneLarge
}

// Camera is a levelData camera as the poster is rendered from it: media.Camera's fields, in its
// order, so the activity converts one into the other without a copy (the contract stays a leaf
// and does not import the converter). Position is where the camera is, looking at Target with
// world Y up; FOV is the vertical field of view in degrees (0: the viewer's default).
type Camera struct {
	Position, Target [3]float64
	FOV              float64
}

// FinishRenditionInput records the outcome of a rendition: State ready with the conversion's
// Result, or failed with Message.
type FinishRenditionInput struct {
	SceneID string
	Folder  string
	State   string
	Message string
	Result  *ConvertRenditionResult
}

// FinishRenditionResult says whether the scene took the outcome, or was gone (its rendition
// folder then removed here, since no purge will name it any more).
type FinishRenditionResult struct {
	Recorded bool
	Removed  int
}

// PendingRenditionsInput asks for scenes still pending after MinAge (fresher ones are being
// started by the service that committed them), at most Limit.
type PendingRenditionsInput struct {
	MinAge time.Duration
	Limit  int
}

// PendingRendition is one scene whose rendition workflow must exist.
type PendingRendition struct {
	SceneID        string
	IntegrationID  string
	ExternalUserID string
}

// PendingRenditionsResult lists them, oldest first.
type PendingRenditionsResult struct {
	Scenes []PendingRendition
}

// ConvertRenditionInput is one conversion: the upload, the folder to write into, and the
// poster's view when a poster is wanted.
type ConvertRenditionInput struct {
	SceneID string
	RenditionSource
}

// ConvertRenditionResult is what was written: Type sog (Key is the .sog) or lod (Key is the
// lod-meta.json of a folder of Files objects), their Bytes, the scene's Gaussians, and the
// poster's key when one was rendered.
type ConvertRenditionResult struct {
	Type      string
	Key       string
	Bytes     int64
	Files     int
	Gaussians int64
	PosterKey string
	// PeakRSS is the converter's largest resident size, in bytes (for capacity planning).
	PeakRSS int64
}

// RenditionProgress is the conversion's heartbeat: its phase and the converter's last line,
// which the Temporal UI shows as the pending activity's details.
type RenditionProgress struct {
	Phase string
	Line  string
}

// DeleteOrphanRenditionsInput looks back Within for rendition workflows that closed without
// completing.
type DeleteOrphanRenditionsInput struct {
	Within time.Duration
}

// DeleteOrphanRenditionsResult counts the closed workflows looked at, the rendition folders of
// deleted scenes emptied and the objects removed from them.
type DeleteOrphanRenditionsResult struct {
	Checked int
	Folders int
	Objects int
}

// RenditionFormats are the upload formats that get a rendition; .sog uploads and LOD folders
// are already what a rendition would be, and get only a poster (PosterFormat).
var RenditionFormats = []string{".ply", ".splat", ".ksplat"}

// RenditionFormat is the converter input format of a scene's upload, and whether the scene
// gets a rendition at all.
func RenditionFormat(splatType, splatURL string) (string, bool) {
	// "file" is ent's scene.SplatTypeFile, spelled out: ent imports this package for its JSON
	// columns, so this package cannot import ent (TestRenditionFormat holds the two together).
	if splatType != "file" {
		return "", false
	}
	ext := extOf(splatURL)
	for _, f := range RenditionFormats {
		if ext == f {
			return ext, true
		}
	}
	return "", false
}

// extOf is the lower-cased extension of a URL's path.
func extOf(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return strings.ToLower(path.Ext(u))
}

// PosterFormat is the format of an upload that gets no rendition, being already what one
// would be, but a poster when the scene has no image: ".sog" for a bundled SOG, "lod" for a LOD
// folder (splatType "lod", its splatUrl the lod-meta.json).
func PosterFormat(splatType, splatURL string) (string, bool) {
	switch {
	case splatType == "lod":
		return "lod", true
	case splatType == "file" && extOf(splatURL) == ".sog":
		return ".sog", true
	}
	return "", false
}

// Processed says whether a scene gets work from the media worker: a rendition (and a poster
// when it has no image) for a RenditionFormat, a poster alone for a PosterFormat without image.
func Processed(splatType, splatURL string, hasImage bool) bool {
	if _, ok := RenditionFormat(splatType, splatURL); ok {
		return true
	}
	_, ok := PosterFormat(splatType, splatURL)
	return ok && !hasImage
}
