// Package web holds splathost's browser code (the viewer and editor embeds and the JS SDK, an
// npm workspace) and compiles its build output into the Go binaries that serve it.
package web

import (
	"embed"
	"io/fs"
)

// dist is `node build.mjs`'s output; "all:" keeps dist/.gitkeep, so the package compiles (serving
// nothing) before the npm build has run.
//
//go:embed all:dist
var dist embed.FS

// Dist is the built tree rooted at web/dist: embed/assets/* (the embed bundles) and sdk/* (the
// SDK module and its types).
var Dist fs.FS = mustSub(dist, "dist")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // only for an invalid dir name, a constant here
	}
	return sub
}
