//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows"
)

// ticketPrefix is the upload ticket prefix of an uploaded key: i/INT/u/OWNER/kind/TICKET/.
func ticketPrefix(key string) string {
	return strings.Join(strings.SplitN(key, "/", 7)[:6], "/") + "/"
}

// backdate moves a ticket's upload window into the past.
func backdate(t *testing.T, prefix, ago string) {
	t.Helper()
	tag, err := env.Process.DB.Pool.Exec(context.Background(),
		`UPDATE upload_tickets SET expires_at = now() - $2::interval WHERE prefix = $1`, prefix, ago)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), prefix)
}

func ticketExists(t *testing.T, prefix string) bool {
	t.Helper()
	var n int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM upload_tickets WHERE prefix = $1`, prefix).Scan(&n))
	return n == 1
}

func TestOrphanSweepRemovesAbandonedUploadsOnly(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "sweeper", nil)
	st := store(t)

	// Abandoned long ago: a file upload, and a LOD folder the client uploaded only part of.
	oldKey := keyOf(t, uploadSplat(t, a, "sweeper", splatBytes(4)))
	folder := fixtures.LODFolder(300)
	var files []any
	for p, b := range folder {
		files = append(files, map[string]any{"relativePath": p, "contentType": lodType(p), "fileSize": len(b)})
	}
	r := do(t, "POST", "/api/v1/uploads/lod-folder", a.keys("sweeper"), map[string]any{"files": files})
	require.Equal(t, 200, r.Status, string(r.Raw))
	lodPrefix := r.Body["folderKey"].(string) + "/"
	m := r.Body["uploads"].([]any)[0].(map[string]any)
	p := m["relativePath"].(string)
	require.Equal(t, 200, putUpload(t, m["uploadUrl"].(string), folder[p], map[string]string{"Content-Type": lodType(p), "Cache-Control": cacheControl}))
	require.Len(t, objectsUnder(t, st, lodPrefix), 1)
	backdate(t, ticketPrefix(oldKey), "3 hours")
	backdate(t, lodPrefix, "3 hours")

	// Kept: a fresh upload; one whose window closed within the commit grace (a commit may still
	// claim it); one past the grace but within the sweep's margin; an old upload that became a
	// scene.
	freshKey := keyOf(t, uploadSplat(t, a, "sweeper", splatBytes(2)))
	graceKey := keyOf(t, uploadSplat(t, a, "sweeper", splatBytes(2)))
	backdate(t, ticketPrefix(graceKey), "30 minutes")
	marginKey := keyOf(t, uploadSplat(t, a, "sweeper", splatBytes(2)))
	backdate(t, ticketPrefix(marginKey), "65 minutes")
	sc := commitScene(t, a, "sweeper", 3)
	sceneKey := keyOf(t, sc["splatUrl"].(string))
	backdate(t, ticketPrefix(sceneKey), "3 hours")

	ctx := context.Background()
	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "orphan-sweep-test-" + ids.New(), TaskQueue: env.Config.TaskQueue}, workflows.SweepOrphanUploads, workflows.SweepInput{})
	require.NoError(t, err)
	// No count is asserted: the scheduled sweep may run at the same moment and take some of them.
	var res workflows.SweepResult
	require.NoError(t, run.Get(ctx, &res))
	recordHistory(t, run.GetID(), run.GetRunID(), "sweep_orphan_uploads.json")

	require.True(t, objectGone(t, st, oldKey))
	require.Empty(t, objectsUnder(t, st, lodPrefix))
	require.False(t, ticketExists(t, ticketPrefix(oldKey)))
	require.False(t, ticketExists(t, lodPrefix))

	for _, k := range []string{freshKey, graceKey, marginKey, sceneKey} {
		stored := k
		if k == sceneKey {
			stored = objectkeys.Sealed(k) // what the committed scene reads
		}
		require.False(t, objectGone(t, st, stored), k)
		require.True(t, ticketExists(t, ticketPrefix(k)), k)
	}
	require.Equal(t, 200, do(t, "GET", "/api/v1/splats/"+sc["id"].(string), a.keys("sweeper"), nil).Status)
	// The upload still inside the grace can still be committed.
	c := do(t, "POST", "/api/v1/splats", a.keys("sweeper"), map[string]any{"title": "late", "splatUrl": env.Config.AssetBase() + "/" + graceKey})
	require.Equal(t, 201, c.Status, string(c.Raw))

	// The schedule that runs the sweep every 15 minutes is in place.
	require.Eventually(t, func() bool {
		desc, err := env.Process.Temporal.ScheduleClient().GetHandle(ctx, workflows.OrphanSweepScheduleID).Describe(ctx)
		return err == nil && len(desc.Schedule.Spec.Intervals) == 1 && desc.Schedule.Spec.Intervals[0].Every == workflows.OrphanSweepEvery
	}, 10*time.Second, 50*time.Millisecond)
}

// TestOrphanSweepEmptiesRenditionsOfInterruptedConversions: a conversion stopped between its
// upload and its recording step (here, an operator terminating the workflow) leaves objects in
// the rendition folder; once its scene is deleted, nothing else removes them. The sweep finds
// such workflows in Temporal and empties the folders of scenes that are gone, and leaves the
// folder of a scene that still exists alone.
func TestOrphanSweepEmptiesRenditionsOfInterruptedConversions(t *testing.T) {
	ctx := context.Background()
	a := newTenant(t)
	ensureCustomer(t, a, "interrupted", nil)
	st := store(t)
	data := trainingPLY(t, 20_000)
	var sceneIDs, folders []string
	for _, name := range []string{"deleted.ply", "kept.ply"} {
		sp := commitFile(t, a, "interrupted", name, "application/ply", data, nil)
		id := sp["id"].(string)
		// The service starts the rendition just after its commit answers.
		eventually(t, "the rendition starts", func() bool {
			return env.Process.Temporal.TerminateWorkflow(ctx, workflows.RenditionWorkflowID(id), "", "operator stops the conversion") == nil
		}, func() string { return renditionMark(id) })
		var owner string
		require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT owner_id FROM scenes WHERE id = $1`, id).Scan(&owner))
		sceneIDs, folders = append(sceneIDs, id), append(folders, objectkeys.RenditionFolder(a.IntegrationID, owner, id))
	}
	// The first scene is deleted (its purge empties the folder), then the interrupted
	// conversion's upload lands: that object is what nothing else would remove.
	require.Equal(t, 200, do(t, "DELETE", splatPath(sceneIDs[0]), a.keys("interrupted"), nil).Status)
	eventually(t, "the scene's purge ran", func() bool {
		var open int
		require.NoError(t, env.Process.DB.Pool.QueryRow(ctx,
			`SELECT count(*) FROM asset_purges WHERE scene_id = $1 AND done_at IS NULL`, sceneIDs[0]).Scan(&open))
		return open == 0
	}, func() string { return purgeMark(t, a.IntegrationID) })
	for _, f := range folders {
		_, err := st.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(f + "scene.sog"),
			Body: strings.NewReader("late upload")})
		require.NoError(t, err)
	}
	// Temporal's visibility lists a closed workflow a moment after it closes.
	require.Eventually(t, func() bool {
		res, err := env.Process.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf(`WorkflowId = '%s' AND ExecutionStatus = 'Terminated'`, workflows.RenditionWorkflowID(sceneIDs[0]))})
		return err == nil && len(res.GetExecutions()) == 1
	}, 30*time.Second, 200*time.Millisecond)

	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "orphan-sweep-test-" + ids.New(), TaskQueue: env.Config.TaskQueue}, workflows.SweepOrphanUploads, workflows.SweepInput{})
	require.NoError(t, err)
	var res workflows.SweepResult
	require.NoError(t, run.Get(ctx, &res))
	recordHistory(t, run.GetID(), run.GetRunID(), "sweep_orphan_renditions.json")
	// The terminated conversion's activity may still finish its last write (the poster, the SOG)
	// after that run, as it may after any scheduled one: the next runs of the schedule take it.
	eventually(t, "the deleted scene's rendition folder is emptied", func() bool {
		if len(objectsUnder(t, st, folders[0])) == 0 {
			return true
		}
		again, err := env.Process.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: "orphan-sweep-test-" + ids.New(), TaskQueue: env.Config.TaskQueue}, workflows.SweepOrphanUploads, workflows.SweepInput{})
		require.NoError(t, err)
		require.NoError(t, again.Get(ctx, nil))
		return len(objectsUnder(t, st, folders[0])) == 0
	}, func() string { return fmt.Sprint(objectsUnder(t, st, folders[0]), renditionMark(sceneIDs[0])) })
	// The live scene's own rendition may be running meanwhile (the dispatcher starts pending
	// scenes), adding its poster: what the sweep must keep is what the folder held.
	require.Contains(t, objectsUnder(t, st, folders[1]), folders[1]+"scene.sog", "a live scene's folder is its own")
}
