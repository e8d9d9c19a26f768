// Package migrations embeds the versioned Postgres migrations generated from the ent schema
// (atlas format, with atlas.sum guarding them against edits after the fact).
package migrations

import "embed"

// FS holds every migration file and atlas.sum.
//
//go:embed *.sql atlas.sum
var FS embed.FS
