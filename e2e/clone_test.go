//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent/clonejob"
	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
)

func clonePath(id string) string { return "/api/v1/splats/" + id + "/clone" }

// listKeys lists every object under prefix with its last-modified time.
func listKeys(t *testing.T, prefix string) map[string]time.Time {
	t.Helper()
	st := store(t)
	out := map[string]time.Time{}
	p := s3.NewListObjectsV2Paginator(st.Client, &s3.ListObjectsV2Input{Bucket: aws.String(st.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToTime(o.LastModified)
		}
	}
	return out
}

// requireCloneSuccess checks the spec's 201 payload of a clone of src.
// extra is what the clone holds beyond the source's charged size (assets referenced from
// levelData, which the source is not charged for).
func requireCloneSuccess(t *testing.T, r *testenv.Response, status int, src map[string]any, extra ...int) map[string]any {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	sp := splatOf(r)
	requireItemShape(t, sp)
	require.Equal(t, sp["id"], r.Body["splatId"])
	require.Equal(t, src["id"], r.Body["sourceSplatId"])
	require.NotEqual(t, src["id"], sp["id"])
	usage := r.Body["usage"].(map[string]any)
	for _, k := range []string{"usedBytes", "limitBytes", "remainingBytes", "percentUsed"} {
		require.IsType(t, float64(0), usage[k], k)
	}
	require.Equal(t, "private", sp["visibility"])
	require.Equal(t, false, sp["allowClone"])
	require.Equal(t, false, sp["featured"])
	require.Equal(t, true, sp["isOwner"])
	require.EqualValues(t, 0, sp["viewCount"])
	want := src["fileSizeBytes"].(float64)
	for _, e := range extra {
		want += float64(e)
	}
	require.Equal(t, want, sp["fileSizeBytes"])
	require.Equal(t, src["splatType"], sp["splatType"])
	require.NotEqual(t, src["splatUrl"], sp["splatUrl"], "the clone has its own copy")
	return sp
}

// cloneAnswer is a clone's final answer: the POST's own, or, when the job outlasted the POST's
// wait (202, as on a loaded machine), the answer of the job polled to its end (pollClone).
func cloneAnswer(t *testing.T, tn tenant, eu, srcID string, r *testenv.Response) *testenv.Response {
	t.Helper()
	if r.Status != 202 {
		return r
	}
	done, _ := pollClone(t, tn, eu, srcID, r.Body["jobId"].(string))
	return done
}

// pollClone polls a 202 job every 200 ms until it closes and returns the closing response; it
// fails when the job stops moving (awaitProgress), not after a fixed time.
func pollClone(t *testing.T, tn tenant, eu, srcID, jobID string) (*testenv.Response, []float64) {
	t.Helper()
	var progress []float64
	var last *testenv.Response
	wfID := workflows.CloneWorkflowID(tn.IntegrationID, customerRecord(t, tn, eu).ID)
	awaitProgress(t, "clone job "+jobID, 200*time.Millisecond, func() (bool, string) {
		r := do(t, "GET", clonePath(srcID)+"/"+jobID, tn.keys(eu), nil)
		last = r
		if r.Status != 200 || r.Body["status"] != "running" {
			return true, ""
		}
		require.Equal(t, jobID, r.Body["jobId"])
		progress = append(progress, r.Body["copiedObjects"].(float64))
		require.LessOrEqual(t, r.Body["copiedObjects"].(float64), r.Body["totalObjects"].(float64))
		return false, fmt.Sprint(r.Body["copiedObjects"], " ", workflowMark(wfID))
	})
	return last, progress
}

func TestCloneDuplicateAndRemixOfAFileScene(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "maker", nil)
	ensureCustomer(t, a, "fan", nil)
	// A scene with a thumbnail and a depth image, and an audio asset referenced from levelData.
	thumb, depth := fixtures.JPEG(80, 45), fixtures.JPEG(40, 20)
	th, dp := requestImages(t, a, "maker", "image/jpeg", thumb, depth)
	require.Equal(t, 200, putUpload(t, th.uploadURL, thumb, signedPut("image/jpeg")))
	require.Equal(t, 200, putUpload(t, dp.uploadURL, depth, signedPut("image/jpeg")))
	data := fixtures.Splat(50)
	r := do(t, "POST", "/api/v1/splats", a.keys("maker"), map[string]any{"title": "Garden",
		"splatUrl": uploadFile(t, a, "maker", "g.splat", "application/splat", data), "imageUrl": th.fileURL, "thumbnailDepthUrl": dp.fileURL})
	require.Equal(t, 201, r.Status, string(r.Raw))
	src := splatOf(r)
	audio := []byte("ID3 audio")
	audioKey := strings.Replace(keyOf(t, th.fileURL), "thumbnail.jpg", "wind.mp3", 1)
	_, err := store(t).Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(store(t).Bucket),
		Key: aws.String(objectkeys.Sealed(audioKey)), Body: bytes.NewReader(audio), ContentType: aws.String("audio/mpeg")})
	require.NoError(t, err)
	updateScene(t, src["id"].(string), `level_data = $2`, fmt.Sprintf(`{"audio":{"url":%q},"camera":{"position":[0,1,4],"target":[0,0,0],"fov":50}}`, env.Config.AssetBase()+"/"+audioKey))
	used0, _ := usageOf(t, a, "maker")
	_, slots0 := accountOf(t, a)

	// Duplicate: the owner's own scene.
	r = do(t, "POST", clonePath(src["id"].(string)), a.keys("maker"), nil)
	dup := requireCloneSuccess(t, r, 201, src, len(audio))
	require.Equal(t, "Garden (Copy)", dup["title"])
	require.Nil(t, dup["remixedFrom"])
	require.Equal(t, "maker", dup["externalUserId"])
	used1, live := usageOf(t, a, "maker")
	_, slots1 := accountOf(t, a)
	require.Equal(t, used0+int64(dup["fileSizeBytes"].(float64)), used1, "storage is charged at clone time")
	require.EqualValues(t, 2, live, "the clone is a live scene of the customer")
	require.Equal(t, slots0, slots1, "its scene slot is not charged until first publish")
	require.EqualValues(t, used1, r.Body["usage"].(map[string]any)["usedBytes"], "the account meter (one customer holds it all)")

	// A deep copy: every object, byte for byte, under the cloner's key space.
	g := do(t, "GET", splatPath(dup["id"].(string)), a.keys("maker"), nil)
	require.Equal(t, 200, g.Status, string(g.Raw))
	d := splatOf(g)
	pairs := [][2]string{{src["splatUrl"].(string), d["splatUrl"].(string)}, {th.fileURL, d["imageUrl"].(string)},
		{env.Config.AssetBase() + "/" + audioKey, d["levelData"].(map[string]any)["audio"].(map[string]any)["url"].(string)}}
	for _, p := range pairs {
		want, wantType, _ := getObject(t, keyOf(t, p[0]))
		got, gotType, _ := getObject(t, keyOf(t, p[1]))
		require.True(t, bytes.Equal(want, got), p[1])
		require.Equal(t, wantType, gotType, "the copy keeps the content type")
		require.Contains(t, keyOf(t, p[1]), "/clone/"+dup["id"].(string)+"/")
	}
	require.EqualValues(t, 50, d["levelData"].(map[string]any)["camera"].(map[string]any)["fov"])

	// The first publish of the clone takes its scene slot.
	p := do(t, "PATCH", splatPath(dup["id"].(string)), a.keys("maker"), map[string]any{"visibility": "public"})
	require.Equal(t, 200, p.Status, string(p.Raw))
	_, slots2 := accountOf(t, a)
	require.Equal(t, slots0+1, slots2)

	// Remix: another customer may clone only a public scene whose owner allows it.
	requireEnvelope(t, do(t, "POST", clonePath(src["id"].(string)), a.keys("fan"), nil), 403)
	p = do(t, "PATCH", splatPath(src["id"].(string)), a.keys("maker"), map[string]any{"visibility": "public"})
	require.Equal(t, 200, p.Status, string(p.Raw))
	requireEnvelope(t, do(t, "POST", clonePath(src["id"].(string)), a.keys("fan"), nil), 403)
	p = do(t, "PATCH", splatPath(src["id"].(string)), a.keys("maker"), map[string]any{"allowClone": true, "title": "Garden v2"})
	require.Equal(t, 200, p.Status, string(p.Raw))
	before := time.Now().UTC().Add(-time.Second)
	r = do(t, "POST", clonePath(src["id"].(string)), a.keys("fan"), nil)
	remix := requireCloneSuccess(t, r, 201, src, len(audio))
	require.Equal(t, "Garden v2", remix["title"], "a remix keeps the title")
	require.Equal(t, "fan", remix["externalUserId"])
	rf := remix["remixedFrom"].(map[string]any)
	require.Equal(t, src["id"], rf["splatId"])
	require.Equal(t, "maker", rf["ownerName"], "no display name: the owner's id")
	clonedAt, err := time.Parse(time.RFC3339, rf["clonedAt"].(string))
	require.NoError(t, err)
	require.True(t, clonedAt.After(before), "clonedAt %s", clonedAt)
	fanUsed, _ := usageOf(t, a, "fan")
	require.EqualValues(t, remix["fileSizeBytes"], fanUsed)
	// The remixer cannot touch the source.
	requireEnvelope(t, do(t, "DELETE", splatPath(src["id"].(string)), a.keys("fan"), nil), 404)
}

func TestCloneErrors(t *testing.T) {
	a := newTenant(t)
	src := commitScene(t, a, "owner", 20)
	id := src["id"].(string)

	r := do(t, "POST", clonePath(id), a.keys(""), nil)
	requireEnvelope(t, r, 400)
	requireEnvelope(t, do(t, "POST", clonePath(id), a.keys("nobody"), nil), 404)
	requireEnvelope(t, do(t, "POST", clonePath("0123456789abcdef01234567"), a.keys("owner"), nil), 404)
	requireEnvelope(t, do(t, "POST", clonePath("not-an-id"), a.keys("owner"), nil), 404)
	requireEnvelope(t, do(t, "GET", clonePath(id)+"/4b1c29e6-5d4e-4a0e-9b7e-1f2a3b4c5d6e", a.keys("owner"), nil), 404)
	requireEnvelope(t, do(t, "GET", clonePath(id)+"/nope", a.keys("owner"), nil), 404)

	// Another integration's scene does not exist for this caller, public or not.
	b := newTenant(t)
	ensureCustomer(t, b, "stranger", nil)
	updateScene(t, id, `visibility = 'public', allow_clone = true`)
	requireEnvelope(t, do(t, "POST", clonePath(id), b.keys("stranger"), nil), 404)
	updateScene(t, id, `visibility = 'private', allow_clone = false`)

	// Plans without cloning.
	free := newIntegration(t, newAccount(t, "free", 1<<30), nil)
	fsrc := commitScene(t, free, "owner", 20)
	r = do(t, "POST", clonePath(fsrc["id"].(string)), free.keys("owner"), nil)
	requireEnvelope(t, r, 403)
	require.Equal(t, "plan_limit", r.Body["code"])
	require.Equal(t, "cloning", r.Body["dimension"])
	v, ok := r.Body["limit"]
	require.True(t, ok, "limit is present")
	require.Nil(t, v)

	// Source files gone from the store: 409, and nothing is charged or created.
	used, _ := usageOf(t, a, "owner")
	st := store(t)
	_, err := st.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(objectkeys.Sealed(keyOf(t, src["splatUrl"].(string))))})
	require.NoError(t, err)
	r = do(t, "POST", clonePath(id), a.keys("owner"), nil)
	requireEnvelope(t, r, 409)
	require.Equal(t, "SOURCE_FILES_MISSING", r.Body["code"])
	after, _ := usageOf(t, a, "owner")
	require.Equal(t, used, after)
	l := do(t, "GET", "/api/v1/splats", a.keys("owner"), nil)
	require.Len(t, l.Body["splats"], 1)
	// The failed job freed the customer's slot: the next clone starts (and fails the same way).
	requireEnvelope(t, do(t, "POST", clonePath(id), a.keys("owner"), nil), 409)
}

// TestCloneQuotaBoundary: a clone that fits exactly succeeds; one byte more is the spec's 413
// (customer, then account scope) and charges nothing.
func TestCloneQuotaBoundary(t *testing.T) {
	a := newTenant(t)
	src := commitScene(t, a, "tight", 40)
	size := int64(src["fileSizeBytes"].(float64))
	ensureCustomer(t, a, "tight", map[string]any{"limitBytes": 2 * size})
	r := do(t, "POST", clonePath(src["id"].(string)), a.keys("tight"), nil)
	requireCloneSuccess(t, r, 201, src)
	r = do(t, "POST", clonePath(src["id"].(string)), a.keys("tight"), nil)
	requireEnvelope(t, r, 413)
	require.Equal(t, "STORAGE_QUOTA_EXCEEDED", r.Body["code"])
	require.Equal(t, "customer", r.Body["scope"])
	require.EqualValues(t, 2*size, r.Body["usedBytes"])
	require.EqualValues(t, 2*size, r.Body["limitBytes"])
	require.EqualValues(t, 0, r.Body["remainingBytes"])
	require.EqualValues(t, size, r.Body["requestedBytes"])
	used, _ := usageOf(t, a, "tight")
	require.EqualValues(t, 2*size, used)

	// Account scope: the bundle holds exactly two copies (the customer's own cap is higher).
	acct := newAccount(t, "pro", 2*size)
	b := newIntegration(t, acct, nil)
	ensureCustomer(t, b, "big", map[string]any{"limitBytes": 10 * size})
	bsrc := commitScene(t, b, "big", 40)
	requireCloneSuccess(t, do(t, "POST", clonePath(bsrc["id"].(string)), b.keys("big"), nil), 201, bsrc)
	r = do(t, "POST", clonePath(bsrc["id"].(string)), b.keys("big"), nil)
	requireEnvelope(t, r, 413)
	require.Equal(t, "account", r.Body["scope"])
	require.EqualValues(t, 2*size, r.Body["usedBytes"])
}

// lodFolderOf is the fixture LOD folder topped up to at least n files with copies of one of
// its cells.
func lodFolderOf(n int) map[string][]byte {
	folder := fixtures.LODFolder(100)
	var cell []byte
	for p, b := range folder {
		if strings.HasSuffix(p, ".webp") {
			cell = b
			break
		}
	}
	for i := 0; len(folder) < n; i++ {
		folder[fmt.Sprintf("extra/%05d.webp", i)] = cell
	}
	return folder
}

// lodScene commits a LOD scene of n files for eu: the fixture folder topped up with copies of
// one of its cells.
func lodScene(t *testing.T, tn tenant, eu string, n int) map[string]any {
	t.Helper()
	folder := lodFolderOf(n)
	ensureCustomer(t, tn, eu, nil)
	up := requestLOD(t, tn, eu, folder)
	paths := fixtures.LODPaths(folder)
	var wg sync.WaitGroup
	work := make(chan string)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				if s := putUpload(t, up.urls[p], folder[p], signedPut(fixtures.LODContentType(p))); s != 200 {
					t.Errorf("PUT %s: %d", p, s)
				}
			}
		}()
	}
	for _, p := range paths {
		work <- p
	}
	close(work)
	wg.Wait()
	// A folder this large may outlast the commit's request budget on a loaded machine: the
	// answer is 503 "retry", and each retry seals only what the one before did not, as a
	// client's retries would.
	sealed := strings.TrimSuffix(objectkeys.Sealed(up.keys[paths[0]]), paths[0])
	var r *testenv.Response
	awaitProgress(t, "the commit of a "+strconv.Itoa(len(paths))+"-file folder", 0, func() (bool, string) {
		r = do(t, "POST", "/api/v1/splats", tn.keys(eu), map[string]any{
			"title": "Big park", "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey})
		return r.Status != 503, fmt.Sprint(len(listKeys(t, sealed)), " sealed")
	})
	require.Equal(t, 201, r.Status, string(r.Raw))
	return splatOf(r)
}

// TestCloneLODFolderPolledToSuccess clones a 2 000-object LOD scene: the request answers 202
// (the client asked not to wait), polls show progress, a second clone is refused with 429
// naming the running job, and the poll ends with exactly the 201 payload and a complete copy.
func TestCloneLODFolderPolledToSuccess(t *testing.T) {
	a := newTenant(t)
	src := lodScene(t, a, "parks", 2000)
	id := src["id"].(string)
	h := a.keys("parks")
	h["Prefer"] = "respond-async"
	r := do(t, "POST", clonePath(id), h, nil)
	require.Equal(t, 202, r.Status, string(r.Raw))
	require.Equal(t, "accepted", r.Body["status"])
	require.Equal(t, id, r.Body["sourceSplatId"])
	jobID := r.Body["jobId"].(string)
	require.IsType(t, float64(0), r.Body["copiedObjects"])
	require.IsType(t, float64(0), r.Body["totalObjects"])

	busy := do(t, "POST", clonePath(id), a.keys("parks"), nil)
	requireEnvelope(t, busy, 429)
	require.Equal(t, "CLONE_IN_PROGRESS", busy.Body["code"])
	require.Equal(t, jobID, busy.Body["jobId"])
	require.Equal(t, id, busy.Body["sourceSplatId"])
	// Another customer's key does not reach the job.
	ensureCustomer(t, a, "other", nil)
	requireEnvelope(t, do(t, "GET", clonePath(id)+"/"+jobID, a.keys("other"), nil), 404)

	done, progress := pollClone(t, a, "parks", id, jobID)
	sp := requireCloneSuccess(t, done, 200, src)
	require.Equal(t, "success", done.Body["status"])
	require.True(t, sort.Float64sAreSorted(progress), "progress never goes back: %v", progress)
	again := do(t, "GET", clonePath(id)+"/"+jobID, a.keys("parks"), nil)
	require.Equal(t, done.Body, again.Body, "a finished job keeps answering its result")
	recordHistory(t, workflows.CloneWorkflowID(a.IntegrationID, mustScene(t, id).OwnerID), jobID, "clone_scene.json")

	g := do(t, "GET", splatPath(sp["id"].(string)), a.keys("parks"), nil)
	require.Equal(t, 200, g.Status)
	srcFolder := do(t, "GET", splatPath(id), a.keys("parks"), nil).Body["splat"].(map[string]any)["lodFolderKey"].(string) + "/"
	dstFolder := splatOf(g)["lodFolderKey"].(string) + "/"
	requireSameFolder(t, srcFolder, dstFolder, 2000)
}

// requireSameFolder checks dst holds exactly src's n objects, by relative path; a committed
// upload folder is read in its sealed copy (objectkeys.Sealed), which the scene serves.
func requireSameFolder(t *testing.T, src, dst string, n int) {
	t.Helper()
	src = objectkeys.Sealed(src)
	rel := func(prefix string) []string {
		var out []string
		for k := range listKeys(t, prefix) {
			out = append(out, strings.TrimPrefix(k, prefix))
		}
		sort.Strings(out)
		return out
	}
	want, got := rel(src), rel(dst)
	require.Len(t, want, n)
	require.Equal(t, want, got, "no object missing, none extra")
}

// TestCloneOfALODFolderWithATileGone: a LOD scene records its file count at commit, so the
// clone plans without listing; the copy's listing finds a tile gone and the job answers 409
// SOURCE_FILES_MISSING, rolled back (nothing charged, no copy left). The clone of the whole
// folder carries the count on, so a clone of the clone plans the same way.
func TestCloneOfALODFolderWithATileGone(t *testing.T) {
	a := newTenant(t)
	src := lodScene(t, a, "tiles", 40)
	id := src["id"].(string)
	sc := mustScene(t, id)
	require.NotNil(t, sc.LodFiles, "the commit records the folder's file count")
	require.Equal(t, 40, *sc.LodFiles)

	r := do(t, "POST", clonePath(id), a.keys("tiles"), nil)
	requireCloneSuccess(t, r, 201, src)
	copyID := r.Body["splatId"].(string)
	require.Equal(t, sc.LodFiles, mustScene(t, copyID).LodFiles, "the clone carries the count")

	used, _ := usageOf(t, a, "tiles")
	owner := customerRecord(t, a, "tiles")
	keys := listKeys(t, objectkeys.Sealed(*sc.LodFolderKey+"/"))
	for k := range keys {
		if strings.HasSuffix(k, ".webp") {
			st := store(t)
			_, err := st.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(k)})
			require.NoError(t, err)
			break
		}
	}
	r = do(t, "POST", clonePath(id), a.keys("tiles"), nil)
	requireEnvelope(t, r, 409)
	require.Equal(t, "SOURCE_FILES_MISSING", r.Body["code"])
	after, _ := usageOf(t, a, "tiles")
	require.Equal(t, used, after, "the failed job released what it reserved")
	jobs, err := env.Process.DB.Ent.CloneJob.Query().Where(clonejob.OwnerID(owner.ID)).Count(context.Background())
	require.NoError(t, err)
	require.Zero(t, jobs)
	// Only the first clone's objects remain under the customer's clone folders, once the failed
	// job's rollback (which may end just after the 409 is answered) has emptied its folder.
	require.Eventually(t, func() bool {
		return len(listKeys(t, "i/"+a.IntegrationID+"/u/"+owner.ID+"/clone/")) == len(keys)
	}, 30*time.Second, 100*time.Millisecond)
}

// TestCloneRefusesAGrownLODTile (issue 12, point 1): a tile rewritten bigger than committed —
// directly in the store, as an unsigned-length upload URL reused after the commit could before
// — makes the folder differ from the scene's record. The clone refuses it (409, rolled back)
// instead of copying the big bytes and charging the recorded size; usage stays the sum of live
// scenes and no copy is left.
func TestCloneRefusesAGrownLODTile(t *testing.T) {
	a := newTenant(t)
	src := lodScene(t, a, "grower", 40)
	id := src["id"].(string)
	sc := mustScene(t, id)
	owner := customerRecord(t, a, "grower")
	st := store(t)
	for k := range listKeys(t, objectkeys.Sealed(*sc.LodFolderKey+"/")) {
		if strings.HasSuffix(k, ".webp") {
			_, err := st.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(k),
				Body: bytes.NewReader(bytes.Repeat([]byte{7}, 1<<20)), ContentType: aws.String("image/webp")})
			require.NoError(t, err)
			break
		}
	}
	used, _ := usageOf(t, a, "grower")
	r := do(t, "POST", clonePath(id), a.keys("grower"), nil)
	requireEnvelope(t, r, 409)
	require.Equal(t, "SOURCE_FILES_MISSING", r.Body["code"])
	require.Contains(t, r.Body["message"], "recorded")
	after, _ := usageOf(t, a, "grower")
	require.Equal(t, used, after, "nothing charged")
	u, live := liveBytesOf(t, a, "grower")
	require.Equal(t, u, live, "usage equals the sum of live scenes")
	// No copy is left once the failed job's rollback (which may end just after the 409 is
	// answered; CI saw two copies listed at once) has emptied its folder.
	require.Eventually(t, func() bool {
		return len(listKeys(t, "i/"+a.IntegrationID+"/u/"+owner.ID+"/clone/")) == 0
	}, 30*time.Second, 100*time.Millisecond, "no copy is left")
	l := do(t, "GET", "/api/v1/splats", a.keys("grower"), nil)
	require.Len(t, l.Body["splats"], 1, "no clone landed")
}

// TestCloneLevelDataCopiesOnlyTheOwnersObjects (issue 12, point 6): levelData is free JSON its
// owner writes; a URL there naming another customer's file is kept as text and never copied
// into the clone (the cloner could not clone that file), while the owner's own asset is.
func TestCloneLevelDataCopiesOnlyTheOwnersObjects(t *testing.T) {
	a := newTenant(t)
	victim := commitScene(t, a, "victim", 16)
	src := commitScene(t, a, "thief", 8)
	own := commitScene(t, a, "thief", 4) // an object of the owner's own key space
	level := fmt.Sprintf(`{"audio": [%q, %q]}`, victim["splatUrl"], own["splatUrl"])
	updateScene(t, src["id"].(string), `level_data = $2::jsonb`, level)
	owner := customerRecord(t, a, "thief")

	r := do(t, "POST", clonePath(src["id"].(string)), a.keys("thief"), nil)
	sp := requireCloneSuccess(t, r, 201, src, int(own["fileSizeBytes"].(float64)))
	copies := listKeys(t, "i/"+a.IntegrationID+"/u/"+owner.ID+"/clone/")
	require.Len(t, copies, 2, "the scene file and the owner's own levelData asset: %v", copies)
	// i/<integration>/u/<customer>/<kind>/<ticket>/<file>: a copy keeps <kind>/<ticket>/<file>.
	victimRel := strings.SplitN(keyOf(t, victim["splatUrl"].(string)), "/", 5)[4]
	for k := range copies {
		require.False(t, strings.HasSuffix(k, "/"+victimRel), "another customer's file was copied: %s", k)
	}
	audio := mustScene(t, sp["id"].(string)).LevelData["audio"].([]any)
	require.Equal(t, victim["splatUrl"], audio[0], "the foreign URL is kept as text")
	require.NotEqual(t, own["splatUrl"], audio[1], "the owner's asset points at its copy")
}
