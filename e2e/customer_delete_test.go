//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
)

// objectGone reports whether neither key nor its sealed copy (objectkeys.Sealed) is in the
// store (HEAD answers 404).
func objectGone(t *testing.T, st *objectstore.Store, key string) bool {
	t.Helper()
	return keyGone(t, st, key) && keyGone(t, st, objectkeys.Sealed(key))
}

// keyGone reports whether the store holds no object at exactly key.
func keyGone(t *testing.T, st *objectstore.Store, key string) bool {
	t.Helper()
	_, err := st.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(key)})
	return err != nil && strings.Contains(err.Error(), "404")
}

// objectsUnder lists the keys under prefix and, for an upload folder, under its sealed copy
// (objectkeys.Sealed), where a committed upload's bytes are kept.
func objectsUnder(t *testing.T, st *objectstore.Store, prefix string) []string {
	t.Helper()
	var keys []string
	prefixes := []string{prefix}
	if sealed := objectkeys.Sealed(prefix); sealed != prefix {
		prefixes = append(prefixes, sealed)
	}
	for _, prefix := range prefixes {
		p := s3.NewListObjectsV2Paginator(st.Client, &s3.ListObjectsV2Input{Bucket: aws.String(st.Bucket), Prefix: aws.String(prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			require.NoError(t, err)
			for _, o := range page.Contents {
				keys = append(keys, aws.ToString(o.Key))
			}
		}
	}
	return keys
}

func accountUsedBytes(t *testing.T, accountID string) int64 {
	t.Helper()
	r := do(t, "GET", "/admin/v1/accounts/"+accountID, admin(), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	return int64(r.Body["account"].(map[string]any)["usedBytes"].(float64))
}

// searchAttribute decodes one Keyword search attribute of a described workflow.
func searchAttribute(t *testing.T, d *workflowservice.DescribeWorkflowExecutionResponse, name string) string {
	t.Helper()
	p, ok := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[name]
	require.True(t, ok, "search attribute %s is set", name)
	var v string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &v))
	return v
}

// purgeClosed reports whether the customer's outbox row is closed, and how many objects it
// recorded.
func purgeClosed(t *testing.T, ownerID string) (bool, int) {
	t.Helper()
	var open, deleted int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE done_at IS NULL), coalesce(sum(deleted_objects), 0) FROM asset_purges
		 WHERE owner_id = $1`, ownerID).Scan(&open, &deleted))
	return open == 0, deleted
}

func TestDeleteCustomerCascadesAndPurgesAssets(t *testing.T) {
	a, other := newTenant(t), newTenant(t)
	st := store(t)
	var keys, sceneIDs []string
	var charged int64
	for _, records := range []int{10, 20, 30} {
		sp := commitScene(t, a, "leaver", records)
		keys, sceneIDs = append(keys, keyOf(t, sp["splatUrl"].(string))), append(sceneIDs, sp["id"].(string))
		charged += int64(records * 32)
	}
	stayer := commitScene(t, a, "stayer", 5)   // same integration, another customer
	twin := commitScene(t, other, "leaver", 7) // another integration, the same EU
	require.EqualValues(t, charged+5*32, accountUsedBytes(t, a.AccountID))
	before := do(t, "GET", "/api/v1/external-user", a.keys("leaver"), nil)
	require.EqualValues(t, charged, eu(before.Body)["usedBytes"])

	r := do(t, "DELETE", "/api/v1/external-user", a.keys("leaver"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	require.EqualValues(t, 3, r.Body["deletedSplatCount"])
	rec := eu(r.Body)
	fields := make([]string, 0, len(rec))
	for k := range rec {
		fields = append(fields, k)
	}
	sort.Strings(fields)
	require.Equal(t, []string{"billingState", "deletedAt", "externalUserId", "id", "status", "usedBytes"}, fields,
		"DELETE returns the reduced record only")
	require.Equal(t, eu(before.Body)["id"], rec["id"])
	require.Equal(t, "leaver", rec["externalUserId"])
	require.Equal(t, "deleted", rec["status"])
	require.Equal(t, "active", rec["billingState"])
	require.EqualValues(t, 0, rec["usedBytes"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, rec["deletedAt"])
	ownerID := rec["id"].(string)

	// The soft-deleted record stays readable, reporting 'deleted'.
	g := do(t, "GET", "/api/v1/external-user", a.keys("leaver"), nil)
	require.Equal(t, 200, g.Status, string(g.Raw))
	require.Equal(t, "deleted", eu(g.Body)["status"])
	require.EqualValues(t, 0, eu(g.Body)["usedBytes"])
	require.Equal(t, rec["deletedAt"], eu(g.Body)["deletedAt"])
	u := do(t, "GET", "/api/v1/external-user/usage", a.keys("leaver"), nil)
	require.EqualValues(t, 0, u.Body["usage"].(map[string]any)["splats"].(map[string]any)["used"])

	// The account is released by exactly the deleted scenes.
	require.EqualValues(t, 5*32, accountUsedBytes(t, a.AccountID))
	// The scenes are gone (the scene cache hears of it through its NOTIFY).
	for _, id := range sceneIDs {
		require.Eventually(t, func() bool {
			return do(t, "GET", "/api/v1/splats/"+id, a.keys(""), nil).Status == 404
		}, 10*time.Second, 20*time.Millisecond, id)
	}

	// The workflow on the in-process worker removes the objects and closes the outbox row.
	for _, k := range keys {
		eventually(t, k, func() bool { return objectGone(t, st, k) }, func() string { return purgeMark(t, a.IntegrationID) })
	}
	eventually(t, "the purge", func() bool { done, _ := purgeClosed(t, ownerID); return done }, func() string { return purgeMark(t, a.IntegrationID) })
	_, deleted := purgeClosed(t, ownerID)
	require.Equal(t, 6, deleted, "three files, each its upload key and its sealed copy")

	// It is visible in Temporal under its business id, with the search attributes.
	wid := workflows.PurgeWorkflowID(a.IntegrationID, ownerID)
	ctx := context.Background()
	eventually(t, "the purge workflow", func() bool {
		d, err := env.Process.Temporal.DescribeWorkflowExecution(ctx, wid, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, func() string { return workflowMark(wid) })
	d, err := env.Process.Temporal.DescribeWorkflowExecution(ctx, wid, "")
	require.NoError(t, err)
	require.Equal(t, "PurgeCustomerAssets", d.GetWorkflowExecutionInfo().GetType().GetName())
	require.Equal(t, a.IntegrationID, searchAttribute(t, d, "integrationId"))
	require.Equal(t, "leaver", searchAttribute(t, d, "externalUserId"))
	recordHistory(t, wid, "", "purge_customer_assets.json")

	// Nobody else lost anything.
	require.Equal(t, 200, do(t, "GET", "/api/v1/splats/"+stayer["id"].(string), a.keys("stayer"), nil).Status)
	require.False(t, objectGone(t, st, keyOf(t, stayer["splatUrl"].(string))))
	tw := do(t, "GET", "/api/v1/external-user", other.keys("leaver"), nil)
	require.Equal(t, "active", eu(tw.Body)["status"])
	require.EqualValues(t, 7*32, eu(tw.Body)["usedBytes"])
	require.Equal(t, 200, do(t, "GET", "/api/v1/splats/"+twin["id"].(string), other.keys("leaver"), nil).Status)
	require.False(t, objectGone(t, st, keyOf(t, twin["splatUrl"].(string))))
	require.EqualValues(t, 7*32, accountUsedBytes(t, other.AccountID))

	// Deleting again is idempotent: nothing more to delete, the same record.
	again := do(t, "DELETE", "/api/v1/external-user", a.keys("leaver"), nil)
	require.Equal(t, 200, again.Status, string(again.Raw))
	require.EqualValues(t, 0, again.Body["deletedSplatCount"])
	require.Equal(t, rec, eu(again.Body))
	require.EqualValues(t, 5*32, accountUsedBytes(t, a.AccountID))

	// Header and existence rules.
	requireEnvelope(t, do(t, "DELETE", "/api/v1/external-user", a.keys(""), nil), 400)
	requireEnvelope(t, do(t, "DELETE", "/api/v1/external-user", a.keys("nobody"), nil), 404)
	requireEnvelope(t, do(t, "DELETE", "/api/v1/external-user", map[string]string{"X-Service-External-User-Id": "leaver"}, nil), 401)

	// A PUT provisions the customer again, empty.
	p := do(t, "PUT", "/api/v1/external-user", a.keys("leaver"), nil)
	require.Equal(t, 200, p.Status, string(p.Raw))
	require.Equal(t, "active", eu(p.Body)["status"])
	require.Nil(t, eu(p.Body)["deletedAt"])
	require.EqualValues(t, 0, eu(p.Body)["usedBytes"])
}

// TestDeleteCustomerPurgesLODFolderAndImages: a LOD scene's whole folder goes, and a file
// scene's thumbnail with its file.
func TestDeleteCustomerPurgesLODFolderAndImages(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "lod-leaver", nil)
	st := store(t)
	folder := fixtures.LODFolder(300)
	var files []any
	for p, b := range folder {
		files = append(files, map[string]any{"relativePath": p, "contentType": lodType(p), "fileSize": len(b)})
	}
	r := do(t, "POST", "/api/v1/uploads/lod-folder", a.keys("lod-leaver"), map[string]any{"files": files})
	require.Equal(t, 200, r.Status, string(r.Raw))
	folderKey := r.Body["folderKey"].(string)
	for _, u := range r.Body["uploads"].([]any) {
		m := u.(map[string]any)
		p := m["relativePath"].(string)
		require.Equal(t, 200, putUpload(t, m["uploadUrl"].(string), folder[p],
			map[string]string{"Content-Type": lodType(p), "Cache-Control": cacheControl}))
	}
	c := do(t, "POST", "/api/v1/splats", a.keys("lod-leaver"), map[string]any{
		"title": "lod", "splatType": "lod", "splatUrl": r.Body["manifestUrl"], "lodFolderKey": folderKey})
	require.Equal(t, 201, c.Status, string(c.Raw))
	require.Len(t, objectsUnder(t, st, objectkeys.Sealed(folderKey+"/")), len(folder))

	jpeg := fixtures.JPEG(8, 8)
	im := do(t, "POST", "/api/v1/uploads/splat-images", a.keys("lod-leaver"),
		map[string]any{"thumbnail": map[string]any{"contentType": "image/jpeg", "fileSize": len(jpeg)}})
	require.Equal(t, 200, im.Status, string(im.Raw))
	th := im.Body["thumbnail"].(map[string]any)
	require.Equal(t, 200, putUpload(t, th["uploadUrl"].(string), jpeg, map[string]string{"Content-Type": "image/jpeg", "Cache-Control": cacheControl}))
	splatURL := uploadSplat(t, a, "lod-leaver", splatBytes(3))
	c = do(t, "POST", "/api/v1/splats", a.keys("lod-leaver"), map[string]any{"title": "f", "splatUrl": splatURL, "imageUrl": th["fileUrl"]})
	require.Equal(t, 201, c.Status, string(c.Raw))

	d := do(t, "DELETE", "/api/v1/external-user", a.keys("lod-leaver"), nil)
	require.Equal(t, 200, d.Status, string(d.Raw))
	require.EqualValues(t, 2, d.Body["deletedSplatCount"])
	require.Eventually(t, func() bool {
		return len(objectsUnder(t, st, folderKey+"/")) == 0 && objectGone(t, st, keyOf(t, splatURL)) &&
			objectGone(t, st, keyOf(t, th["fileUrl"].(string)))
	}, 30*time.Second, 50*time.Millisecond)
	require.Zero(t, accountUsedBytes(t, a.AccountID))
}

func lodType(p string) string {
	if strings.HasSuffix(p, ".json") {
		return "application/json"
	}
	return "image/webp"
}

// TestPurgeRedriveStartsForgottenPurges: an outbox row whose workflow was never started (the
// process died right after the commit) is started by the re-drive, and the objects go.
func TestPurgeRedriveStartsForgottenPurges(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "crashed", nil)
	var ownerID string
	ctx := context.Background()
	require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT id FROM external_users WHERE integration_id = $1 AND external_user_id = 'crashed'`,
		a.IntegrationID).Scan(&ownerID))
	st := store(t)
	key := "i/" + a.IntegrationID + "/u/" + ownerID + "/splat_file/" + ids.New() + "/scene.splat"
	folder := "i/" + a.IntegrationID + "/u/" + ownerID + "/lod_folder/" + ids.New() + "/"
	for _, k := range []string{key, folder + "lod-meta.json", folder + "0_0/means_l.webp"} {
		_, err := st.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(k), Body: strings.NewReader("x")})
		require.NoError(t, err)
	}
	purgeID := ids.New()
	_, err := env.Process.DB.Pool.Exec(ctx, `INSERT INTO asset_purges (id, created_at, updated_at, integration_id,
		owner_id, external_user_id, keys, prefixes, scene_count)
		VALUES ($1, now() - interval '5 minutes', now(), $2, $3, 'crashed', $4, $5, 2)`,
		purgeID, a.IntegrationID, ownerID, `["`+key+`"]`, `["`+folder+`"]`)
	require.NoError(t, err)

	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "purge-redrive-test-" + ids.New(), TaskQueue: env.Config.TaskQueue}, workflows.RedrivePurges, workflows.RedriveInput{})
	require.NoError(t, err)
	// No count is asserted: the scheduled re-drive may have started the purge first.
	var res workflows.RedriveResult
	require.NoError(t, run.Get(ctx, &res))
	eventually(t, "the purge", func() bool {
		return objectGone(t, st, key) && len(objectsUnder(t, st, folder)) == 0
	}, func() string { return purgeMark(t, a.IntegrationID) })
	eventually(t, "the purge", func() bool { done, _ := purgeClosed(t, ownerID); return done }, func() string { return purgeMark(t, a.IntegrationID) })
	_, deleted := purgeClosed(t, ownerID)
	require.Equal(t, 3, deleted)
}

// recordHistory writes a workflow's history to workflows/testdata/<file> for the replay tests
// when SPLATHOST_RECORD_HISTORY is set: run the recording test once after a change to its
// workflow (behind workflow.GetVersion) to add a history of the new version. runID "" is the
// latest run.
func recordHistory(t *testing.T, workflowID, runID, file string) {
	t.Helper()
	if os.Getenv("SPLATHOST_RECORD_HISTORY") == "" {
		return
	}
	iter := env.Process.Temporal.GetWorkflowHistory(context.Background(), workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, e)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&h)
	require.NoError(t, err)
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	path := filepath.Join(root, "workflows", "testdata", file)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	t.Logf("history written to %s", path)
}

// TestDeleteCustomerRacesSceneDeletes: scene DELETEs running against the customer DELETE take
// their locks in the same order (scene, customer, account), so none fails, and every byte is
// released exactly once.
func TestDeleteCustomerRacesSceneDeletes(t *testing.T) {
	a := newTenant(t)
	var sceneIDs []string
	for i := 0; i < 12; i++ {
		sceneIDs = append(sceneIDs, commitScene(t, a, "racer", 2)["id"].(string))
	}
	statuses := make(chan int, len(sceneIDs)+1)
	var wg sync.WaitGroup
	for _, id := range sceneIDs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := testenv.Do(env.URL, "DELETE", "/api/v1/splats/"+id, a.keys("racer"), nil)
			if err == nil {
				statuses <- r.Status
			}
		}()
	}
	wg.Add(1)
	var deleted float64
	go func() {
		defer wg.Done()
		r, err := testenv.Do(env.URL, "DELETE", "/api/v1/external-user", a.keys("racer"), nil)
		if err == nil {
			statuses <- r.Status
			if r.Status == 200 {
				deleted = r.Body["deletedSplatCount"].(float64)
			}
		}
	}()
	wg.Wait()
	close(statuses)
	var sceneOK int
	for s := range statuses {
		require.Contains(t, []int{200, 404}, s)
		if s == 200 {
			sceneOK++
		}
	}
	t.Logf("scene DELETEs that won: %d, scenes the customer DELETE took: %v", sceneOK-1, deleted)
	// The customer DELETE answered 200 and took whatever the scene DELETEs had not.
	require.Equal(t, len(sceneIDs)+1, sceneOK+int(deleted))
	require.Zero(t, accountUsedBytes(t, a.AccountID))
	var n int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT splat_count FROM accounts WHERE id = $1`, a.AccountID).Scan(&n))
	require.Zero(t, n, "every slot released exactly once")
}
