//go:build e2e

package e2e

import (
	"context"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
)

// ownerIDOf is the owner id (the record id) of tn's customer eu.
func ownerIDOf(t *testing.T, tn tenant, eu string) string {
	t.Helper()
	var id string
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT id FROM external_users WHERE integration_id = $1 AND external_user_id = $2`, tn.IntegrationID, eu).Scan(&id))
	return id
}

// openPurges counts the customer's asset_purges rows of kind that are not closed yet, and all of
// them.
func openPurges(t *testing.T, ownerID, kind string) (open, all int) {
	t.Helper()
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE done_at IS NULL), count(*) FROM asset_purges WHERE owner_id = $1 AND kind = $2`,
		ownerID, kind).Scan(&open, &all))
	return open, all
}

// TestRefusedConcurrentCommitsKeepTheWinnersFiles: N commits of one upload race while the test
// holds the customer's row lock. A commit seals and checks its uploads with their tickets locked
// (seal.go), so one holds the upload and waits for the customer's row, the others wait for the
// upload. The first wins; the others then find the upload committed and answer 409 naming the
// winner's splatId (a retry whose answer was lost), reaching neither the quota nor the store:
// no refusal, no cleanup that could touch the winner's object (one used to delete every object
// of the upload), no second copy over the sealed bytes the winner checked.
func TestRefusedConcurrentCommitsKeepTheWinnersFiles(t *testing.T) {
	a := newTenant(t)
	const n = 6
	ensureCustomer(t, a, "racer", map[string]any{"maxSplats": 1})
	ownerID := ownerIDOf(t, a, "racer")
	fileURL := uploadSplat(t, a, "racer", splatBytes(4))
	key := keyOf(t, fileURL)

	ctx := context.Background()
	lock, err := env.Process.DB.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `SELECT 1 FROM external_users WHERE id = $1 FOR UPDATE`, ownerID)
	require.NoError(t, err)

	statuses := make([]int, n)
	bodies := make([]map[string]any, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := testenv.Do(env.URL, "POST", "/api/v1/splats", a.keys("racer"), map[string]any{"title": "t", "splatUrl": fileURL})
			if err == nil {
				statuses[i], bodies[i] = r.Status, r.Body
			}
		}()
	}
	// One commit holds the upload and waits for the customer's row in reserve; the others have
	// resolved the free upload and wait for its ticket.
	require.Eventually(t, func() bool {
		var customer, ticket int
		require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE query LIKE '%external_users%FOR UPDATE%'),
			count(*) FILTER (WHERE query LIKE '%upload_tickets%FOR UPDATE%')
			FROM pg_stat_activity WHERE wait_event_type = 'Lock'`).Scan(&customer, &ticket))
		return customer == 1 && ticket == n-1
	}, 30*time.Second, 20*time.Millisecond)
	require.NoError(t, lock.Commit(ctx))
	wg.Wait()

	counts := map[int]int{}
	var winner string
	for i, s := range statuses {
		counts[s]++
		if s == 201 {
			winner = bodies[i]["splatId"].(string)
		}
	}
	require.Equal(t, map[int]int{201: 1, 409: n - 1}, counts, "one wins, the others find the upload committed")
	for i, s := range statuses {
		if s == 409 {
			require.Equal(t, winner, bodies[i]["splatId"], "the 409 names the winner's scene")
		}
	}
	_, purges := openPurges(t, ownerID, "upload")
	require.Zero(t, purges, "no commit was refused, so no cleanup runs")
	st := store(t)
	require.True(t, objectExists(t, st, key), "the winner's file is still in the store")
	g := do(t, "GET", splatPath(winner), a.keys("racer"), nil)
	require.Equal(t, 200, g.Status, string(g.Raw))
	require.Equal(t, winner, g.Body["splat"].(map[string]any)["id"])
	var kept int
	require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM upload_tickets WHERE scene_id = $1 AND committed_at IS NOT NULL`,
		winner).Scan(&kept))
	require.Equal(t, 1, kept, "the committed ticket survives the purges")
}

// TestRefusedCommitRemovesItsUncommittedUpload: the refusal's purge does remove an upload that
// nobody committed, durably (through the outbox), and the ticket goes with it so no later
// commit can land a scene on removed objects.
func TestRefusedCommitRemovesItsUncommittedUpload(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "tight", map[string]any{"limitBytes": 100})
	ownerID := ownerIDOf(t, a, "tight")
	fileURL := uploadSplat(t, a, "tight", splatBytes(4)) // 128 bytes > 100
	r := do(t, "POST", "/api/v1/splats", a.keys("tight"), map[string]any{"title": "t", "splatUrl": fileURL})
	requireEnvelope(t, r, 413)
	st := store(t)
	require.Eventually(t, func() bool {
		open, all := openPurges(t, ownerID, "upload")
		return all == 1 && open == 0 && objectGone(t, st, keyOf(t, fileURL))
	}, eventuallyWait, 50*time.Millisecond)
	var tickets int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM upload_tickets WHERE owner_id = $1`, ownerID).Scan(&tickets))
	require.Zero(t, tickets, "the claimed ticket is gone")
	// A retry finds no upload: a 4xx, never a scene without its file.
	r = do(t, "POST", "/api/v1/splats", a.keys("tight"), map[string]any{"title": "t", "splatUrl": fileURL})
	require.Less(t, r.Status, 500, string(r.Raw))
	require.NotEqual(t, 201, r.Status, string(r.Raw))
}

// TestRetriedCommitNamesItsScene: a commit retried after its answer was lost gets 409 with the
// scene it created; nobody else learns anything about the upload.
func TestRetriedCommitNamesItsScene(t *testing.T) {
	a, other := newTenant(t), newTenant(t)
	ensureCustomer(t, a, "retrier", nil)
	ensureCustomer(t, a, "neighbour", nil)
	ensureCustomer(t, other, "retrier", nil)
	fileURL := uploadSplat(t, a, "retrier", splatBytes(2))
	body := map[string]any{"title": "once", "splatUrl": fileURL}
	r := do(t, "POST", "/api/v1/splats", a.keys("retrier"), body)
	require.Equal(t, 201, r.Status, string(r.Raw))
	id := r.Body["splatId"].(string)

	again := do(t, "POST", "/api/v1/splats", a.keys("retrier"), body)
	requireEnvelope(t, again, 409)
	require.Equal(t, id, again.Body["splatId"], "the retry learns the scene its first attempt created")

	for _, h := range []map[string]string{a.keys("neighbour"), other.keys("retrier")} {
		o := do(t, "POST", "/api/v1/splats", h, body)
		require.GreaterOrEqual(t, o.Status, 400, string(o.Raw))
		require.Less(t, o.Status, 500, string(o.Raw))
		require.NotContains(t, o.Body, "splatId", string(o.Raw))
		require.NotContains(t, string(o.Raw), id)
	}

	// Once the scene is deleted, the retry still gets 409, naming nothing.
	require.Equal(t, 200, do(t, "DELETE", splatPath(id), a.keys("retrier"), nil).Status)
	gone := do(t, "POST", "/api/v1/splats", a.keys("retrier"), body)
	requireEnvelope(t, gone, 409)
	require.NotContains(t, gone.Body, "splatId", string(gone.Raw))
}

// TestSplatURLOfAnotherFileUnderOwnUploadIs400: a splatUrl under the caller's own upload prefix
// that is not the file the upload issued (another name in its folder, a LOD tile) is a 400 with
// issues; it used to reach the store with an empty key and answer 500.
func TestSplatURLOfAnotherFileUnderOwnUploadIs400(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "prober", nil)
	fileURL := uploadSplat(t, a, "prober", splatBytes(2))
	dir := fileURL[:strings.LastIndex(fileURL, "/")]
	for _, u := range []string{dir + "/other.splat", dir + "/sub/scene.splat", dir + "/"} {
		r := do(t, "POST", "/api/v1/splats", a.keys("prober"), map[string]any{"title": "t", "splatUrl": u})
		issues := requireEnvelope(t, r, 400)
		require.True(t, issuesMention(issues, "splatUrl"), "%s: %s", u, r.Raw)
	}
	folder := fixtures.LODFolder(3)
	var files []any
	var tile string
	for p, b := range folder {
		files = append(files, map[string]any{"relativePath": p, "contentType": lodType(p), "fileSize": len(b)})
	}
	lr := do(t, "POST", "/api/v1/uploads/lod-folder", a.keys("prober"), map[string]any{"files": files})
	require.Equal(t, 200, lr.Status, string(lr.Raw))
	for _, u := range lr.Body["uploads"].([]any) {
		if p := u.(map[string]any)["relativePath"].(string); path.Ext(p) == ".webp" {
			tile = lr.Body["folderKey"].(string) + "/" + p
		}
	}
	require.NotEmpty(t, tile)
	tileURL := env.Config.AssetBase() + "/" + tile
	for _, body := range []map[string]any{
		{"title": "t", "splatUrl": tileURL},
		{"title": "t", "splatType": "lod", "splatUrl": tileURL, "lodFolderKey": lr.Body["folderKey"]},
		{"title": "t", "splatType": "lod", "splatUrl": lr.Body["manifestUrl"], "lodFolderKey": path.Dir(tile)},
	} {
		r := do(t, "POST", "/api/v1/splats", a.keys("prober"), body)
		require.NotEqual(t, 500, r.Status, string(r.Raw))
		requireEnvelope(t, r, 400)
	}
}

// uploadLODScene uploads a LOD folder of tiles files and a thumbnail for eu and commits them as
// one scene; it returns the scene id, the folder key and the thumbnail's key.
func uploadLODScene(t *testing.T, tn tenant, eu string, tiles int) (string, string, string) {
	t.Helper()
	folder := fixtures.LODFolder(tiles)
	var files []any
	for p, b := range folder {
		files = append(files, map[string]any{"relativePath": p, "contentType": lodType(p), "fileSize": len(b)})
	}
	r := do(t, "POST", "/api/v1/uploads/lod-folder", tn.keys(eu), map[string]any{"files": files})
	require.Equal(t, 200, r.Status, string(r.Raw))
	folderKey := r.Body["folderKey"].(string)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, u := range r.Body["uploads"].([]any) {
		m := u.(map[string]any)
		p := m["relativePath"].(string)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			require.Equal(t, 200, putUpload(t, m["uploadUrl"].(string), folder[p],
				map[string]string{"Content-Type": lodType(p), "Cache-Control": cacheControl}))
		}()
	}
	wg.Wait()
	jpeg := fixtures.JPEG(8, 8)
	im := do(t, "POST", "/api/v1/uploads/splat-images", tn.keys(eu),
		map[string]any{"thumbnail": map[string]any{"contentType": "image/jpeg", "fileSize": len(jpeg)}})
	require.Equal(t, 200, im.Status, string(im.Raw))
	th := im.Body["thumbnail"].(map[string]any)
	require.Equal(t, 200, putUpload(t, th["uploadUrl"].(string), jpeg, map[string]string{"Content-Type": "image/jpeg", "Cache-Control": cacheControl}))
	c := do(t, "POST", "/api/v1/splats", tn.keys(eu), map[string]any{
		"title": "lod", "splatType": "lod", "splatUrl": r.Body["manifestUrl"], "lodFolderKey": folderKey, "imageUrl": th["fileUrl"]})
	require.Equal(t, 201, c.Status, string(c.Raw))
	return c.Body["splatId"].(string), folderKey, keyOf(t, th["fileUrl"].(string))
}

// TestDeleteLODSceneAnswersAtOncePurgesEventually: DELETE of a LOD scene answers without
// touching the store — the outbox row is there when it answers — and its folder, thumbnail and
// view records go afterwards through PurgeAssets, which closes the row.
func TestDeleteLODSceneAnswersAtOncePurgesEventually(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "lodder", nil)
	id, folderKey, thumb := uploadLODScene(t, a, "lodder", 300)
	st := store(t)
	require.NotEmpty(t, objectsUnder(t, st, folderKey+"/"))

	start := time.Now()
	r := do(t, "DELETE", splatPath(id), a.keys("lodder"), nil)
	took := time.Since(start)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"status": "success"}, r.Body)
	require.Less(t, took, 2*time.Second, "DELETE does no store work in the request")
	var purgeID string
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT id FROM asset_purges WHERE kind = 'scene' AND scene_id = $1`, id).Scan(&purgeID),
		"the DELETE's transaction wrote the outbox row")
	requireEnvelope(t, do(t, "GET", splatPath(id), a.keys("lodder"), nil), 404)

	require.Eventually(t, func() bool {
		return len(objectsUnder(t, st, folderKey+"/")) == 0 && objectGone(t, st, thumb)
	}, eventuallyWait, 100*time.Millisecond)
	wid := workflows.AssetPurgeWorkflowID(workflows.AssetPurgeInput{PurgeID: purgeID, Kind: workflows.PurgeKindScene, IntegrationID: a.IntegrationID})
	ctx, cancel := context.WithTimeout(context.Background(), eventuallyWait)
	defer cancel()
	var res workflows.PurgeResult
	require.NoError(t, env.Process.Temporal.GetWorkflow(ctx, wid, "").Get(ctx, &res))
	require.Greater(t, res.Deleted, 1, "the folder's files and the thumbnail")
	var done bool
	require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT done_at IS NOT NULL FROM asset_purges WHERE id = $1`, purgeID).Scan(&done))
	require.True(t, done)
	recordHistory(t, wid, "", "purge_assets_scene.json")
}

// TestSceneDeleteRedriveFinishesForgottenPurge: outbox rows of a scene DELETE and of a refused
// commit whose workflows never started (the process died right after its commit) are found by
// the purge re-drive, which runs PurgeAssets for them: the objects go and the rows close.
func TestSceneDeleteRedriveFinishesForgottenPurge(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "crashed", nil)
	ownerID := ownerIDOf(t, a, "crashed")
	ctx := context.Background()
	st := store(t)
	base := "i/" + a.IntegrationID + "/u/" + ownerID
	key := base + "/splat_file/" + ids.New() + "/scene.splat"
	folder := base + "/lod_folder/" + ids.New() + "/"
	put := func(k string) {
		_, err := st.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(k), Body: strings.NewReader("x")})
		require.NoError(t, err)
	}
	for _, k := range []string{key, folder + "lod-meta.json", folder + "0_0/means_l.webp"} {
		put(k)
	}
	sceneID, scenePurge := ids.New(), ids.New()
	_, err := env.Process.DB.Pool.Exec(ctx, `INSERT INTO asset_purges (id, created_at, updated_at, kind, integration_id,
		owner_id, external_user_id, keys, prefixes, scene_id, scene_count)
		VALUES ($1, now() - interval '5 minutes', now(), 'scene', $2, $3, 'crashed', $4, $5, $6, 1)`,
		scenePurge, a.IntegrationID, ownerID, `["`+key+`"]`, `["`+folder+`"]`, sceneID)
	require.NoError(t, err)

	// A refused commit's upload: an uncommitted ticket and its object.
	fileURL := uploadSplat(t, a, "crashed", splatBytes(1))
	var ticketID string
	require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT id FROM upload_tickets WHERE owner_id = $1`, ownerID).Scan(&ticketID))
	uploadPurge := ids.New()
	_, err = env.Process.DB.Pool.Exec(ctx, `INSERT INTO asset_purges (id, created_at, updated_at, kind, integration_id,
		owner_id, external_user_id, ticket_ids)
		VALUES ($1, now() - interval '5 minutes', now(), 'upload', $2, $3, 'crashed', $4)`,
		uploadPurge, a.IntegrationID, ownerID, `["`+ticketID+`"]`)
	require.NoError(t, err)

	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "purge-redrive-test-" + ids.New(), TaskQueue: env.Config.TaskQueue}, workflows.RedrivePurges, workflows.RedriveInput{})
	require.NoError(t, err)
	// No count is asserted: the scheduled re-drive may have started the purges first.
	require.NoError(t, run.Get(ctx, nil))
	require.Eventually(t, func() bool {
		return objectGone(t, st, key) && len(objectsUnder(t, st, folder)) == 0 && objectGone(t, st, keyOf(t, fileURL))
	}, eventuallyWait, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		open, _ := openPurges(t, ownerID, "scene")
		openU, _ := openPurges(t, ownerID, "upload")
		return open == 0 && openU == 0
	}, eventuallyWait, 50*time.Millisecond)
	var deleted int
	require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT deleted_objects FROM asset_purges WHERE id = $1`, scenePurge).Scan(&deleted))
	require.Equal(t, 3, deleted)
	recordHistory(t, run.GetID(), "", "redrive_purges_kinds.json")
}

// TestUploadPurgeNeverDeletesWhatAScenesNames: the upload purge re-checks at run time: keys a
// live scene of the owner names stay, whatever the outbox row says, and so does a ticket that was
// committed; only the rest goes.
func TestUploadPurgeNeverDeletesWhatAScenesNames(t *testing.T) {
	a := newTenant(t)
	sc := commitScene(t, a, "keeper", 2)
	ownerID := ownerIDOf(t, a, "keeper")
	live := keyOf(t, sc["splatUrl"].(string))
	var committed string
	ctx := context.Background()
	require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT id FROM upload_tickets WHERE scene_id = $1`, sc["id"]).Scan(&committed))
	stray := "i/" + a.IntegrationID + "/u/" + ownerID + "/splat_images/" + ids.New() + "/depth.png"
	st := store(t)
	_, err := st.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(stray), Body: strings.NewReader("x")})
	require.NoError(t, err)
	purgeID := ids.New()
	_, err = env.Process.DB.Pool.Exec(ctx, `INSERT INTO asset_purges (id, created_at, updated_at, kind, integration_id,
		owner_id, external_user_id, keys, ticket_ids)
		VALUES ($1, now(), now(), 'upload', $2, $3, 'keeper', $4, $5)`,
		purgeID, a.IntegrationID, ownerID, `["`+live+`", "`+stray+`"]`, `["`+committed+`"]`)
	require.NoError(t, err)
	in := workflows.AssetPurgeInput{PurgeID: purgeID, Kind: workflows.PurgeKindUpload, IntegrationID: a.IntegrationID, ExternalUserID: "keeper"}
	run, err := workflows.StartAssetPurge(ctx, env.Process.Temporal, env.Config.TaskQueue, in)
	require.NoError(t, err)
	var res workflows.PurgeResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, 2, res.Deleted, "only the stray key and its sealed copy's key")
	require.True(t, objectGone(t, st, stray))
	require.True(t, objectExists(t, st, objectkeys.Sealed(live)), "the scene's file stays")
	var tickets int
	require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM upload_tickets WHERE id = $1`, committed).Scan(&tickets))
	require.Equal(t, 1, tickets, "a committed ticket is never claimed")
	require.Equal(t, 200, do(t, "GET", splatPath(sc["id"].(string)), a.keys("keeper"), nil).Status)
}
