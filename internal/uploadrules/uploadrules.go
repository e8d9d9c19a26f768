// Package uploadrules holds the upload rules that reach beyond the scene service, which
// enforces them: the Cache-Control every signed upload carries and a LOD folder's manifest and
// file count. The benchmark meets them with the same values, never a copy.
package uploadrules

const (
	// CacheControl is part of every signed upload: assets are immutable under unique keys.
	CacheControl = "public, max-age=31536000, immutable"
	// LODManifest is the file a LOD folder must have at its root.
	LODManifest = "lod-meta.json"
	// MinLODFiles and MaxLODFiles bound the files of one LOD folder upload.
	MinLODFiles = 2
	MaxLODFiles = 20_000
)
