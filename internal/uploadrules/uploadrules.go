// Package uploadrules holds the upload rules that reach beyond the scene service, which
// enforces them: the Cache-Control every signed upload carries and a LOD folder's manifest and
// file count. The benchmark meets them with the same values, never a copy.
package uploadrules

import splathost "github.com/splathost/splathost/sdk/go"

const (
	// CacheControl is part of every signed upload: assets are immutable under unique keys. The
	// value is the SDK's, which clients send: the product may import the SDK, never the reverse,
	// so the SDK holds the one literal and the service signs exactly what its clients send.
	CacheControl = splathost.CacheControl
	// LODManifest is the file a LOD folder must have at its root.
	LODManifest = "lod-meta.json"
	// MinLODFiles and MaxLODFiles bound the files of one LOD folder upload.
	MinLODFiles = 2
	MaxLODFiles = 20_000
)
