// Package uploadrules holds the upload rules that reach beyond the scene service, which
// enforces them: the Cache-Control every signed upload carries, a LOD folder's manifest and
// file count, and the largest file (which the bound on open uploads and the usage answer
// read). The benchmark meets them with the same values, never a copy.
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
	// MaxFileBytes is the largest file one upload may declare (a splat file in parts). It is
	// also the room beyond a customer's remaining storage that their open uploads may declare
	// (quota.OpenUploadRoom), so one upload larger than what is left still reaches the commit's
	// 413.
	MaxFileBytes = 20 << 30
)
