// Package media reads and transforms 3D Gaussian-splat scenes in pure Go, for the rendition
// activities and the bench tools: the 3DGS PLY header (plyfile.ReadHeader, StatPLY), level-of-detail
// decimation (Decimate, LODLevels) and a CPU poster rasteriser (RenderPoster) that frames a
// scene as the web viewer does. It imports nothing of the service, so it runs anywhere a file
// does.
//
// Everything here reads the "Plain" PLY the INRIA 3DGS trainer writes (one vertex element of
// float32 properties). Other scene files (SuperSplat's compressed PLY, .splat, .ksplat) are
// normalised to that PLY by splat-transform first; plyfile.Header.Plain tells which is which.
package media

import "math"

// finite reports whether the float32 bits are neither NaN nor ±Inf.
func finite(bits uint32) bool { return bits&0x7f800000 != 0x7f800000 }

// isFinite reports whether v is neither NaN nor ±Inf.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
