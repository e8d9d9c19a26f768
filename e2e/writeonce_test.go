//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/workflows"
)

// Write-once bytes (issue 26, item 1). An upload URL stays valid for its whole window: a PUT to
// it after the commit, after a delete or after the ticket expired must neither change what a
// scene serves nor leave anything stored outside every cap once the bucket sweep ran.

// vandal is size bytes an attacker would rather serve: a page, not a splat.
func vandal(size int) []byte {
	b := bytes.Repeat([]byte(" "), size)
	copy(b, "<html><script>alert(1)</script>")
	return b
}

// putFile uploads data as a single file for eu and returns the upload URL (kept by the attacker)
// and the fileUrl.
func putFile(t *testing.T, tn tenant, eu, name, contentType string, data []byte) (uploadURL, fileURL string) {
	t.Helper()
	up := do(t, "POST", "/api/v1/uploads/splat-file", tn.keys(eu),
		map[string]any{"fileName": name, "contentType": contentType, "fileSize": len(data)})
	require.Equal(t, 200, up.Status, string(up.Raw))
	uploadURL, fileURL = up.Body["uploadUrl"].(string), up.Body["fileUrl"].(string)
	require.Equal(t, 200, putUpload(t, uploadURL, data, signedPut(contentType)))
	return uploadURL, fileURL
}

// sweepBucket runs the orphan sweep, bucket sweep included, without the bucket sweep's age guard.
func sweepBucket(t *testing.T) workflows.SweepResult {
	t.Helper()
	return runSweep(t, workflows.SweepInput{StrayMinAge: time.Nanosecond})
}

// runSweep runs one orphan sweep, bucket sweep included, with in (SweepInput{}: as the schedule
// runs it, age guard and all).
func runSweep(t *testing.T, in workflows.SweepInput) workflows.SweepResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "write-once-sweep-" + ids.New(), TaskQueue: env.Config.TaskQueue},
		workflows.SweepOrphanUploads, in)
	require.NoError(t, err)
	var res workflows.SweepResult
	require.NoError(t, run.Get(ctx, &res))
	return res
}

// requireNoStrays audits the integration's objects: every one belongs to a scene or an open
// upload ticket, and every scene's file is there.
func requireNoStrays(t *testing.T, tn tenant) int {
	t.Helper()
	orphans, missing, objects := objectAudit(t, store(t), tn.IntegrationID)
	require.Empty(t, orphans, "objects stored outside every scene and open ticket")
	require.Empty(t, missing, "scenes whose file is gone")
	return objects
}

func TestWriteOnceAfterCommitAndDelete(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "keeper", nil)
	data := fixtures.PLY(300)
	uploadURL, fileURL := putFile(t, a, "keeper", "scene.ply", "application/ply", data)
	r := do(t, "POST", "/api/v1/splats", a.keys("keeper"), map[string]any{"title": "kept", "splatUrl": fileURL, "visibility": "public"})
	require.Equal(t, 201, r.Status, string(r.Raw))
	id, served := r.Body["splatId"].(string), splatOf(r)["splatUrl"].(string)

	// After the commit: the same URL, the same size, other bytes (the format check bypassed).
	status := putUpload(t, uploadURL, vandal(len(data)), signedPut("application/ply"))
	got := fetchAsset(t, "GET", served, nil)
	require.Equal(t, 200, got.status)
	require.True(t, bytes.Equal(data, got.body), "the scene serves the bytes its commit checked (re-PUT answered %d)", status)
	sweepBucket(t)
	require.True(t, bytes.Equal(data, fetchAsset(t, "GET", served, nil).body))
	requireNoStrays(t, a)

	// After the delete and its purge: the PUT recreates an object nothing charges; the sweep
	// takes it, and nothing serves it meanwhile.
	require.Equal(t, 200, do(t, "DELETE", splatPath(id), a.keys("keeper"), nil).Status)
	eventually(t, "the delete's purge empties the customer's objects", func() bool {
		return len(objectsUnder(t, store(t), "i/"+a.IntegrationID+"/")) == 0
	}, func() string { return purgeMark(t, a.IntegrationID) })
	status = putUpload(t, uploadURL, vandal(len(data)), signedPut("application/ply"))
	requireAssetNotFound(t, fetchAsset(t, "GET", served, nil))
	res := sweepBucket(t)
	if status == 200 {
		require.GreaterOrEqual(t, res.Strays, 1, "the recreated object was swept")
	}
	require.Zero(t, requireNoStrays(t, a), "nothing of the deleted scene is stored")
}

// TestWriteOnceAfterDeleteNextSweep (issue 38, item 10): a PUT to a deleted scene's upload URL,
// inside the URL's hour, recreates the object; the next sweep, run as the schedule runs it
// (with its age guard), removes it: a committed ticket has no upload in flight to protect.
func TestWriteOnceAfterDeleteNextSweep(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "gone", nil)
	data := fixtures.PLY(100)
	uploadURL, fileURL := putFile(t, a, "gone", "scene.ply", "application/ply", data)
	r := do(t, "POST", "/api/v1/splats", a.keys("gone"), map[string]any{"title": "gone", "splatUrl": fileURL})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.Equal(t, 200, do(t, "DELETE", splatPath(r.Body["splatId"].(string)), a.keys("gone"), nil).Status)
	prefix := "i/" + a.IntegrationID + "/"
	require.Eventually(t, func() bool { return len(objectsUnder(t, store(t), prefix)) == 0 },
		time.Minute, 200*time.Millisecond, "the delete's purge empties the customer's objects")

	require.Equal(t, 200, putUpload(t, uploadURL, vandal(len(data)), signedPut("application/ply")),
		"the URL is still inside its hour")
	require.NotEmpty(t, objectsUnder(t, store(t), prefix), "the PUT recreated the object")
	// No count is asserted: the scheduled sweep may run at the same moment and take it.
	runSweep(t, workflows.SweepInput{})
	require.Empty(t, objectsUnder(t, store(t), prefix), "nothing of the deleted scene outlives one sweep")
}

func TestWriteOnceLODFolder(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "tiles", nil)
	folder := fixtures.LODFolder(40)
	up := requestLOD(t, a, "tiles", folder)
	putLOD(t, up, folder, fixtures.LODPaths(folder))
	r := do(t, "POST", "/api/v1/splats", a.keys("tiles"), map[string]any{"title": "tiles", "splatType": "lod",
		"splatUrl": up.manifestURL, "lodFolderKey": up.folderKey, "visibility": "public"})
	require.Equal(t, 201, r.Status, string(r.Raw))
	g := do(t, "GET", splatPath(r.Body["splatId"].(string)), a.keys("tiles"), nil)
	require.Equal(t, up.folderKey, splatOf(g)["lodFolderKey"], "the scene names the folder its commit named")
	manifest := splatOf(r)["splatUrl"].(string)

	var tile string
	for _, p := range fixtures.LODPaths(folder) {
		if strings.HasSuffix(p, ".webp") {
			tile = p
			break
		}
	}
	require.NotEmpty(t, tile)
	tileURL := strings.TrimSuffix(manifest, fixtures.LODManifest) + tile
	require.True(t, bytes.Equal(folder[tile], fetchAsset(t, "GET", tileURL, nil).body))
	for _, p := range []string{tile, fixtures.LODManifest} {
		putUpload(t, up.urls[p], vandal(len(folder[p])), signedPut(fixtures.LODContentType(p)))
	}
	require.True(t, bytes.Equal(folder[tile], fetchAsset(t, "GET", tileURL, nil).body), "a tile never changes after the commit")
	require.True(t, bytes.Equal(folder[fixtures.LODManifest], fetchAsset(t, "GET", manifest, nil).body), "nor does the manifest")
	sweepBucket(t)
	require.Equal(t, len(folder), requireNoStrays(t, a), "the scene holds its sealed folder and nothing else")
}

func TestWriteOnceAfterExpiry(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "late", nil)
	data := splatBytes(64)
	uploadURL, fileURL := putFile(t, a, "late", "scene.splat", "application/splat", data)
	// The ticket's window closed long ago (the URL itself stays signed for its hour): the
	// sweep takes the ticket and its object, and a PUT after that recreates nothing lasting.
	backdate(t, ticketPrefix(keyOf(t, fileURL)), "3 hours")
	sweepBucket(t)
	require.Zero(t, requireNoStrays(t, a))
	putUpload(t, uploadURL, data, signedPut("application/splat"))
	r := do(t, "POST", "/api/v1/splats", a.keys("late"), map[string]any{"title": "late", "splatUrl": fileURL})
	require.Equal(t, 400, r.Status, "an expired, swept upload commits nothing: %s", r.Raw)
	sweepBucket(t)
	require.Zero(t, requireNoStrays(t, a))
}

// TestBucketSweepSealsScenesCommittedBeforeSealing: a scene committed before commits sealed has
// its bytes only under its upload key; the bucket sweep copies them to the sealed key (what every
// reader reads) before it removes the upload object, so such a scene loses nothing.
func TestBucketSweepSealsScenesCommittedBeforeSealing(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "elder", nil)
	data := fixtures.PLY(120)
	fileURL := uploadFile(t, a, "elder", "scene.ply", "application/ply", data)
	r := do(t, "POST", "/api/v1/splats", a.keys("elder"), map[string]any{"title": "elder", "splatUrl": fileURL, "visibility": "public"})
	require.Equal(t, 201, r.Status, string(r.Raw))
	served := splatOf(r)["splatUrl"].(string)
	key := keyOf(t, fileURL)
	// Put the store in the old layout: the bytes at the upload key, no sealed copy.
	st := store(t)
	ctx := context.Background()
	require.NoError(t, objectstore.Copy(ctx, st.Client, st.Bucket, objectkeys.Sealed(key), key))
	_, err := st.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(objectkeys.Sealed(key))})
	require.NoError(t, err)
	requireAssetNotFound(t, fetchAsset(t, "GET", served, nil))

	sweepBucket(t)
	got := fetchAsset(t, "GET", served, nil)
	require.Equal(t, 200, got.status, string(got.body))
	require.True(t, bytes.Equal(data, got.body))
	require.True(t, keyGone(t, st, key), "the upload object goes once sealed")
	requireNoStrays(t, a)
}

// TestLODCommitSealsOnlyWhatAnEarlierAttemptDidNot: a failed commit removes its sealed copies
// before it answers, and when it cannot, they outlive it for a few minutes (until the bucket
// sweep takes them). A commit then copies only the objects not sealed yet, or sealed from
// bytes PUT again since (their ETags differ). Here an earlier attempt left half the folder
// sealed, and one of its files was PUT again with other bytes afterwards.
func TestLODCommitSealsOnlyWhatAnEarlierAttemptDidNot(t *testing.T) {
	ctx := context.Background()
	a := newTenant(t)
	ensureCustomer(t, a, "resumer", nil)
	folder := lodFolderOf(200)
	up := requestLOD(t, a, "resumer", folder)
	paths := fixtures.LODPaths(folder)
	putLOD(t, up, folder, paths)
	st := store(t)
	for _, p := range paths[:100] {
		require.NoError(t, objectstore.Copy(ctx, st.Client, st.Bucket, up.keys[p], objectkeys.Sealed(up.keys[p])))
	}
	changed := paths[1]
	again := bytes.Clone(folder[changed])
	again[len(again)-1] ^= 0xff
	require.Equal(t, 200, putUpload(t, up.urls[changed], again, signedPut(fixtures.LODContentType(changed))))
	sealedFolder := strings.TrimSuffix(objectkeys.Sealed(up.keys[paths[0]]), paths[0])
	before := listKeys(t, sealedFolder)
	require.Equal(t, 100, len(before))
	time.Sleep(1100 * time.Millisecond) // listings give LastModified to the second

	r := do(t, "POST", "/api/v1/splats", a.keys("resumer"), map[string]any{
		"title": "Resumed", "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey})
	require.Equal(t, 201, r.Status, string(r.Raw))
	after := listKeys(t, sealedFolder)
	require.Equal(t, len(paths), len(after), "every file sealed")
	for _, p := range paths[:100] {
		k := objectkeys.Sealed(up.keys[p])
		if p == changed {
			require.True(t, after[k].After(before[k]), "the copy of bytes PUT since is made again")
			continue
		}
		require.Equal(t, before[k], after[k], "%s was sealed already: not copied again", p)
	}
	out, err := st.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(objectkeys.Sealed(up.keys[changed]))})
	require.NoError(t, err)
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	require.NoError(t, err)
	require.Equal(t, again, got, "the scene holds the bytes uploaded last before its commit")
}
