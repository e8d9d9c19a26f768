//go:build e2e

package e2e

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/objectkeys"
)

// TestLODCommitOfTheLargestFolder: the spec's largest LOD folder, 20 000 files (tiny ones: the
// cost is per file), commits with a 201 and every file sealed. How long it takes is the
// benchmark's row (bin/bench -lodcommit-only), never this test's.
func TestLODCommitOfTheLargestFolder(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "largest", nil)
	folder := lodFolderOf(20_000)
	require.Len(t, folder, 20_000)
	up := requestLOD(t, a, "largest", folder)
	putLOD(t, up, folder, fixtures.LODPaths(folder))

	r := do(t, "POST", "/api/v1/splats", a.keys("largest"), map[string]any{
		"title": "Largest", "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.EqualValues(t, folderBytes(folder), r.Body["splat"].(map[string]any)["fileSizeBytes"])
	require.Len(t, listKeys(t, objectkeys.Sealed(up.folderKey+"/")), 20_000, "every file sealed")
}

// TestFailedLODCommitLeavesNoSealedCopies: a LOD commit that fails answers with nothing of it
// left in the store. A folder with a file missing copies nothing; a folder whose manifest turns
// out not to be JSON only after every file was sealed removes its copies before the answer.
// Either way the upload stays committable: fixed, the same ticket commits.
func TestFailedLODCommitLeavesNoSealedCopies(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "failer", nil)
	folder := lodFolderOf(500)
	up := requestLOD(t, a, "failer", folder)
	paths := fixtures.LODPaths(folder)
	sealed := objectkeys.Sealed(up.folderKey + "/")
	commit := func() map[string]any {
		r := do(t, "POST", "/api/v1/splats", a.keys("failer"), map[string]any{
			"title": "Failer", "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey})
		if r.Status == 201 {
			return r.Body
		}
		require.Equal(t, 400, r.Status, string(r.Raw))
		return r.Body
	}

	last := paths[0] // a cell, uploaded last
	require.NotEqual(t, fixtures.LODManifest, last)
	putLOD(t, up, folder, paths[1:])
	body := commit()
	require.Contains(t, issuesOf(body), "1 of 500 files were not uploaded")
	require.Empty(t, listKeys(t, sealed), "a folder with a file missing seals nothing")

	require.Contains(t, paths, fixtures.LODManifest)
	garbage := bytes.Repeat([]byte("x"), len(folder[fixtures.LODManifest]))
	require.Equal(t, 200, putUpload(t, up.urls[fixtures.LODManifest], garbage, signedPut(fixtures.LODContentType(fixtures.LODManifest))))
	putLOD(t, up, folder, []string{last})
	body = commit()
	require.Contains(t, issuesOf(body), "splatUrl", "the manifest is the cause: %v", body)
	require.Empty(t, listKeys(t, sealed), "the 500 copies the failed commit made are gone when it answers")

	putLOD(t, up, folder, []string{fixtures.LODManifest})
	body = commit()
	require.Equal(t, "success", body["status"], body)
	require.Len(t, listKeys(t, sealed), 500)
	sweepBucket(t) // the upload objects of a committed ticket go with the sweep
	requireNoStrays(t, a)
}
