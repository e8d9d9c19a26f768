//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/testenv"
)

const cacheControl = "public, max-age=31536000, immutable"

// splatBytes is a valid .splat file of n 32-byte records.
func splatBytes(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		for _, f := range []float32{float32(i), 0, 0, 0.1, 0.1, 0.1} {
			_ = binary.Write(&b, binary.LittleEndian, math.Float32bits(f))
		}
		b.Write([]byte{200, 100, 50, 255, 128, 128, 128, 255})
	}
	return b.Bytes()
}

// putUpload sends body to a signed URL with the given headers and returns the status.
func putUpload(t *testing.T, url string, body []byte, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest("PUT", url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// requirePutRefused asserts the store refuses a PUT to a signed URL: a 403, or — for a body
// much larger than the signed length — the connection closed while the body was still being
// sent (the store answers from the headers and stops reading). Either way nothing is stored;
// callers check the object afterwards.
func requirePutRefused(t *testing.T, url string, body []byte, headers map[string]string, msg string) {
	t.Helper()
	if status := refusedPut(t, url, body, headers, msg); status != 0 {
		require.Equal(t, 403, status, msg)
	}
}

// refusedPut sends a PUT the store should refuse and returns its status, or 0 when the store
// closed the connection while the body was still being sent (anything else fails the test).
func refusedPut(t *testing.T, url string, body []byte, headers map[string]string, msg string) int {
	t.Helper()
	req, err := http.NewRequest("PUT", url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		require.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE), "%s: %v", msg, err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// ensureCustomer provisions eu under tn (idempotent) with optional caps.
func ensureCustomer(t *testing.T, tn tenant, eu string, caps map[string]any) {
	t.Helper()
	var body any // a nil map would be sent as JSON null, which is not an object
	if caps != nil {
		body = caps
	}
	r := do(t, "PUT", "/api/v1/external-user", tn.keys(eu), body)
	require.Equal(t, 200, r.Status, string(r.Raw))
}

// uploadSplat does step one and two of an upload: it asks for a signed URL and PUTs the bytes.
func uploadSplat(t *testing.T, tn tenant, eu string, body []byte) string {
	t.Helper()
	r := do(t, "POST", "/api/v1/uploads/splat-file", tn.keys(eu),
		map[string]any{"fileName": "scene.splat", "contentType": "application/splat", "fileSize": len(body)})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, 200, putUpload(t, r.Body["uploadUrl"].(string), body,
		map[string]string{"Content-Type": "application/splat", "Cache-Control": cacheControl}))
	return r.Body["fileUrl"].(string)
}

// commitScene uploads a .splat of records×32 bytes for eu (provisioning eu if needed) and
// commits it; it returns the committed splat item.
func commitScene(t *testing.T, tn tenant, eu string, records int) map[string]any {
	t.Helper()
	if r := do(t, "GET", "/api/v1/external-user", tn.keys(eu), nil); r.Status == 404 {
		ensureCustomer(t, tn, eu, nil)
	}
	fileURL := uploadSplat(t, tn, eu, splatBytes(records))
	r := do(t, "POST", "/api/v1/splats", tn.keys(eu), map[string]any{"title": "Scene " + eu, "splatUrl": fileURL})
	require.Equal(t, 201, r.Status, string(r.Raw))
	return r.Body["splat"].(map[string]any)
}

func store(t *testing.T) *objectstore.Store {
	t.Helper()
	s, err := objectstore.New(env.Config)
	require.NoError(t, err)
	return s
}

// keyOf is the object key of an asset URL: a stored or upload URL (AssetBase + "/" + key), or
// an asset-route URL of an answer (/assets/<key> or /assets/s/<token>/<key>, assets.go).
func keyOf(t *testing.T, url string) string {
	t.Helper()
	if i := strings.Index(url, "/assets/s/"); i >= 0 {
		_, key, ok := strings.Cut(url[i+len("/assets/s/"):], "/")
		require.True(t, ok, url)
		return key
	}
	if i := strings.Index(url, "/assets/"); i >= 0 && !strings.HasPrefix(url, env.Config.AssetBase()+"/") {
		return url[i+len("/assets/"):]
	}
	key, ok := strings.CutPrefix(url, env.Config.AssetBase()+"/")
	require.True(t, ok, url)
	return key
}

func TestUploadAndCommitSplatFile(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "maker", nil)
	body := splatBytes(10)
	r := do(t, "POST", "/api/v1/uploads/splat-file", a.keys("maker"),
		map[string]any{"fileName": "My Scene.splat", "contentType": "application/splat", "fileSize": len(body)})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	up, fileURL := r.Body["uploadUrl"].(string), r.Body["fileUrl"].(string)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT`, r.Body["expiresAt"])
	require.Contains(t, keyOf(t, fileURL), "i/"+a.IntegrationID+"/u/", "keys name the integration and customer")

	// The store enforces what was signed.
	require.Equal(t, 403, putUpload(t, up, body, map[string]string{"Content-Type": "application/octet-stream", "Cache-Control": cacheControl}))
	require.Equal(t, 403, putUpload(t, up, body, map[string]string{"Content-Type": "application/splat", "Cache-Control": "no-cache"}))
	require.Equal(t, 200, putUpload(t, up, body, map[string]string{"Content-Type": "application/splat", "Cache-Control": cacheControl}))

	r = do(t, "POST", "/api/v1/splats", a.keys("maker"), map[string]any{
		"title": "  Hello  ", "description": "d", "splatUrl": fileURL, "initialCameraPosition": []float64{0, 1, 2}})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.Regexp(t, `^[0-9a-f]{24}$`, r.Body["splatId"])
	sp := r.Body["splat"].(map[string]any)
	require.Equal(t, r.Body["splatId"], sp["id"])
	require.Equal(t, "Hello", sp["title"])
	require.Equal(t, "private", sp["visibility"])
	require.Equal(t, "maker", sp["externalUserId"])
	require.Equal(t, true, sp["isOwner"])
	require.Equal(t, true, sp["allowEmbed"])
	require.Equal(t, true, sp["allowComments"])
	require.Equal(t, true, sp["allowReactions"])
	require.Equal(t, false, sp["allowClone"])
	require.Equal(t, false, sp["featured"])
	require.Nil(t, sp["remixedFrom"])
	require.Equal(t, "file", sp["splatType"])
	require.EqualValues(t, len(body), sp["fileSizeBytes"])
	usage := r.Body["usage"].(map[string]any)
	require.EqualValues(t, len(body), usage["usedBytes"], "the account meter")
	require.EqualValues(t, 1<<30, usage["limitBytes"])

	u := do(t, "GET", "/api/v1/external-user/usage", a.keys("maker"), nil).Body["usage"].(map[string]any)
	require.EqualValues(t, len(body), u["storage"].(map[string]any)["usedBytes"])
	require.EqualValues(t, 1, u["splats"].(map[string]any)["used"])

	// The same upload cannot become a second scene.
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("maker"), map[string]any{"title": "again", "splatUrl": fileURL}), 409)
}

func TestCommitRejectsForeignAndBrokenUploads(t *testing.T) {
	a, b := newTenant(t), newTenant(t)
	ensureCustomer(t, a, "alice", nil)
	ensureCustomer(t, a, "bob", nil)
	ensureCustomer(t, b, "alice", nil)
	aliceURL := uploadSplat(t, a, "alice", splatBytes(4))
	// Another customer of the same integration, or another integration's customer: 403.
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("bob"), map[string]any{"title": "x", "splatUrl": aliceURL}), 403)
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", b.keys("alice"), map[string]any{"title": "x", "splatUrl": aliceURL}), 403)
	// Not our URL at all: 400.
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("alice"), map[string]any{"title": "x", "splatUrl": "https://evil.example/a.splat"}), 400)
	// Signed but never uploaded: 400.
	r := do(t, "POST", "/api/v1/uploads/splat-file", a.keys("alice"),
		map[string]any{"fileName": "a.splat", "contentType": "application/splat", "fileSize": 64})
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("alice"), map[string]any{"title": "x", "splatUrl": r.Body["fileUrl"]}), 400)
	// Uploaded bytes that are not the declared format: 400.
	r = do(t, "POST", "/api/v1/uploads/splat-file", a.keys("alice"),
		map[string]any{"fileName": "a.ply", "contentType": "model/ply", "fileSize": 10})
	require.Equal(t, 200, putUpload(t, r.Body["uploadUrl"].(string), []byte("not a ply!"),
		map[string]string{"Content-Type": "model/ply", "Cache-Control": cacheControl}))
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("alice"), map[string]any{"title": "x", "splatUrl": r.Body["fileUrl"]}), 400)
	// Missing EU and unknown customer.
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys(""), map[string]any{"title": "x", "splatUrl": aliceURL}), 400)
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("nobody"), map[string]any{"title": "x", "splatUrl": aliceURL}), 404)
	// The original owner can still commit it.
	r = do(t, "POST", "/api/v1/splats", a.keys("alice"), map[string]any{"title": "mine", "splatUrl": aliceURL})
	require.Equal(t, 201, r.Status, string(r.Raw))
}

func TestUploadRequestValidation(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "v", nil)
	cases := []struct {
		path  string
		body  any
		issue string
	}{
		{"/api/v1/uploads/splat-file", map[string]any{"fileName": "a.obj", "contentType": "application/octet-stream", "fileSize": 5}, "fileName"},
		{"/api/v1/uploads/splat-file", map[string]any{"fileName": "a.ply", "contentType": "image/png", "fileSize": 5}, "contentType"},
		{"/api/v1/uploads/splat-file", map[string]any{"fileName": "a.ply", "contentType": "model/ply", "fileSize": int64(3) << 30}, "fileSize"},
		{"/api/v1/uploads/splat-file", map[string]any{"fileName": "a.ply", "contentType": "model/ply"}, "fileSize: required"},
		{"/api/v1/uploads/lod-folder", map[string]any{"files": []any{}}, "files"},
		{"/api/v1/uploads/lod-folder", map[string]any{"files": []any{
			map[string]any{"relativePath": "lod-meta.json", "contentType": "application/json", "fileSize": 10},
			map[string]any{"relativePath": "../x.webp", "contentType": "image/webp", "fileSize": 10}}}, "files[1].relativePath"},
		{"/api/v1/uploads/lod-folder", map[string]any{"files": []any{
			map[string]any{"relativePath": "lod-meta.json", "contentType": "application/json", "fileSize": 10},
			map[string]any{"relativePath": "/abs.webp", "contentType": "image/webp", "fileSize": 10}}}, "relative"},
		{"/api/v1/uploads/lod-folder", map[string]any{"files": []any{
			map[string]any{"relativePath": "a/lod-meta.json", "contentType": "application/json", "fileSize": 10},
			map[string]any{"relativePath": "a/0.webp", "contentType": "image/webp", "fileSize": 10}}}, "lod-meta.json"},
		{"/api/v1/uploads/lod-folder", map[string]any{"files": []any{
			map[string]any{"relativePath": "lod-meta.json", "contentType": "application/json", "fileSize": 10},
			map[string]any{"relativePath": "lod-meta.json", "contentType": "application/json", "fileSize": 10}}}, "duplicate"},
		{"/api/v1/uploads/lod-folder", map[string]any{"files": []any{
			map[string]any{"relativePath": "lod-meta.json", "contentType": "application/json", "fileSize": 10},
			map[string]any{"relativePath": "0.webp", "contentType": "image/webp", "fileSize": 51 << 20}}}, "fileSize"},
		{"/api/v1/uploads/splat-images", map[string]any{}, "body"},
		{"/api/v1/uploads/splat-images", map[string]any{"thumbnail": map[string]any{"contentType": "image/gif", "fileSize": 5}}, "thumbnail.contentType"},
		{"/api/v1/uploads/splat-images", map[string]any{"depth": map[string]any{"contentType": "image/png", "fileSize": 5}}, "depth.contentType"},
		{"/api/v1/uploads/splat-images", map[string]any{"thumbnail": map[string]any{"contentType": "image/png", "fileSize": 9 << 20}}, "thumbnail.fileSize"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "POST", c.path, a.keys("v"), c.body), 400)
			require.True(t, issuesMention(issues, c.issue), "issues %v should mention %q", issues, c.issue)
		})
	}
	// Inactive or unknown customers cannot upload: 401. Missing EU: 400.
	ensureCustomer(t, a, "sleepy", map[string]any{"status": "inactive"})
	ok := map[string]any{"fileName": "a.splat", "contentType": "application/splat", "fileSize": 32}
	requireEnvelope(t, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("sleepy"), ok), 401)
	requireEnvelope(t, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("ghost"), ok), 401)
	requireEnvelope(t, do(t, "POST", "/api/v1/uploads/splat-file", a.keys(""), ok), 400)
}

func TestSplatImagesSignContentLength(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "pics", nil)
	jpeg := append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, bytes.Repeat([]byte{1}, 60)...)
	r := do(t, "POST", "/api/v1/uploads/splat-images", a.keys("pics"),
		map[string]any{"thumbnail": map[string]any{"contentType": "image/jpeg", "fileSize": len(jpeg)}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	th := r.Body["thumbnail"].(map[string]any)
	_, hasDepth := r.Body["depth"]
	require.False(t, hasDepth)
	// A body of another length than signed is refused by the store.
	require.NotEqual(t, 200, putUpload(t, th["uploadUrl"].(string), append(jpeg, 0),
		map[string]string{"Content-Type": "image/jpeg", "Cache-Control": cacheControl}))
	require.Equal(t, 200, putUpload(t, th["uploadUrl"].(string), jpeg,
		map[string]string{"Content-Type": "image/jpeg", "Cache-Control": cacheControl}))
	splatURL := uploadSplat(t, a, "pics", splatBytes(2))
	r = do(t, "POST", "/api/v1/splats", a.keys("pics"), map[string]any{"title": "with thumb", "splatUrl": splatURL, "imageUrl": th["fileUrl"]})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.Equal(t, keyOf(t, th["fileUrl"].(string)), keyOf(t, r.Body["splat"].(map[string]any)["imageUrl"].(string)))
	require.EqualValues(t, 64+len(jpeg), r.Body["splat"].(map[string]any)["fileSizeBytes"], "thumbnails are charged too")
}

// TestConcurrentCommitsNeverOvershootQuota: 200 commits race for room for exactly 100.
func TestConcurrentCommitsNeverOvershootQuota(t *testing.T) {
	a := newTenant(t)
	const size, room, tries = 64, 100, 200
	ensureCustomer(t, a, "racer", map[string]any{"limitBytes": size * room})
	urls := make([]string, tries)
	for i := range urls {
		urls[i] = parkUpload(t, a, "racer", splatBytes(size/32)) // more than the bound on open uploads
	}
	statuses := make([]int, tries)
	var wg sync.WaitGroup
	for i := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := testenv.Do(env.URL, "POST", "/api/v1/splats", a.keys("racer"), map[string]any{"title": "t", "splatUrl": urls[i]})
			if err == nil {
				statuses[i] = r.Status
			}
		}()
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	require.Equal(t, map[int]int{201: room, 413: tries - room}, counts)
	var used, live int64
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(), `SELECT u.used_bytes,
		(SELECT coalesce(sum(file_size_bytes), 0) FROM scenes WHERE owner_id = u.id) FROM external_users u
		WHERE u.integration_id = $1 AND u.external_user_id = 'racer'`, a.IntegrationID).Scan(&used, &live))
	require.EqualValues(t, size*room, used)
	require.Equal(t, used, live, "usedBytes equals the sum of live scenes")
}

func TestConcurrentCommitsRespectMaxSplats(t *testing.T) {
	a := newTenant(t)
	const room, tries = 10, 30
	ensureCustomer(t, a, "capped", map[string]any{"maxSplats": room})
	urls := make([]string, tries)
	for i := range urls {
		urls[i] = parkUpload(t, a, "capped", splatBytes(1)) // more than the bound on open uploads
	}
	statuses := make([]int, tries)
	bodies := make([]map[string]any, tries)
	var wg sync.WaitGroup
	for i := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := testenv.Do(env.URL, "POST", "/api/v1/splats", a.keys("capped"), map[string]any{"title": "t", "splatUrl": urls[i]})
			if err == nil {
				statuses[i], bodies[i] = r.Status, r.Body
			}
		}()
	}
	wg.Wait()
	n := 0
	for i, s := range statuses {
		if s == 201 {
			n++
			continue
		}
		require.Equal(t, 403, s)
		require.Equal(t, "plan_limit", bodies[i]["code"])
		require.Equal(t, "splatCount", bodies[i]["dimension"])
		require.Equal(t, "customer", bodies[i]["scope"], "the customer's maxSplats")
		require.EqualValues(t, room, bodies[i]["limit"])
		require.EqualValues(t, room, bodies[i]["current"])
		require.NotEmpty(t, bodies[i]["upgradeUrl"])
	}
	require.Equal(t, room, n)
}

func TestAccountScopeQuotaAndOverage(t *testing.T) {
	acct := newAccount(t, "enterprise", 100)
	a := newIntegration(t, acct, nil)
	ensureCustomer(t, a, "big", map[string]any{"limitBytes": 1000}) // over-allocation is allowed
	url := uploadSplat(t, a, "big", splatBytes(4))
	r := do(t, "POST", "/api/v1/splats", a.keys("big"), map[string]any{"title": "t", "splatUrl": url})
	require.Equal(t, 413, r.Status, string(r.Raw))
	require.Equal(t, "STORAGE_QUOTA_EXCEEDED", r.Body["code"])
	require.Equal(t, "account", r.Body["scope"])
	require.EqualValues(t, 0, r.Body["usedBytes"])
	require.EqualValues(t, 100, r.Body["limitBytes"])
	require.EqualValues(t, 100, r.Body["remainingBytes"])
	require.EqualValues(t, 128, r.Body["requestedBytes"])
	// The failed commit removes the uploaded object, through its outbox row and workflow (which
	// queue behind every other purge the worker has, hence the wider bound).
	st := store(t)
	require.Eventually(t, func() bool {
		_, err := st.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(keyOf(t, url))})
		return err != nil && strings.Contains(err.Error(), "404")
	}, eventuallyWait, 50*time.Millisecond)

	// With overage on, the account scope never fires; the customer scope still does.
	require.Equal(t, 200, do(t, "PATCH", "/admin/v1/accounts/"+acct, admin(), map[string]any{"overage": true}).Status)
	r = do(t, "POST", "/api/v1/splats", a.keys("big"), map[string]any{"title": "t", "splatUrl": uploadSplat(t, a, "big", splatBytes(4))})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.EqualValues(t, 128, r.Body["usage"].(map[string]any)["usedBytes"])
	require.EqualValues(t, 100, r.Body["usage"].(map[string]any)["percentUsed"], "clamped")
	r = do(t, "POST", "/api/v1/splats", a.keys("big"), map[string]any{"title": "t", "splatUrl": uploadSplat(t, a, "big", splatBytes(30))})
	require.Equal(t, 413, r.Status, string(r.Raw))
	require.Equal(t, "customer", r.Body["scope"])
	require.EqualValues(t, 128, r.Body["usedBytes"])
	require.EqualValues(t, 1000, r.Body["limitBytes"])
	require.EqualValues(t, 872, r.Body["remainingBytes"])
	require.EqualValues(t, 960, r.Body["requestedBytes"])
}

// TestAssetsAreReadOnlyAndCORS checks the object store the stack runs and the asset route in
// front of it: a browser on any origin can GET a committed scene's file through the URL the API
// gave (the viewer fetches it), but anonymous clients can neither read, list nor write the bucket
// itself, and the asset route takes no writes.
func TestAssetsAreReadOnlyAndCORS(t *testing.T) {
	a := newTenant(t)
	sc := commitScene(t, a, "reader", 8)
	fileURL := sc["splatUrl"].(string)

	req, err := http.NewRequest("GET", fileURL, nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://embed-host.example")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.Len(t, body, 8*32)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))

	list, err := http.Get(env.Config.AssetBase() + "/?list-type=2")
	require.NoError(t, err)
	list.Body.Close()
	require.Equal(t, 403, list.StatusCode, "anonymous listing is refused")

	storeURL := env.Config.AssetBase() + "/" + keyOf(t, fileURL)
	get, err := http.Get(storeURL)
	require.NoError(t, err)
	get.Body.Close()
	require.Equal(t, 403, get.StatusCode, "anonymous reads of the store are refused")
	for _, u := range []string{storeURL, fileURL} {
		put, err := http.NewRequest("PUT", u, strings.NewReader("overwritten"))
		require.NoError(t, err)
		resp, err = http.DefaultClient.Do(put)
		require.NoError(t, err)
		resp.Body.Close()
		require.Contains(t, []int{403, 405}, resp.StatusCode, "anonymous writes are refused: %s", u)
	}
	got, _, _ := getObject(t, keyOf(t, fileURL))
	require.Len(t, got, 8*32, "nothing was overwritten")
}

// liveBytesOf is the customer's usedBytes and the sum of their live (unarchived) scenes and
// reserved clone jobs, straight from Postgres: the two must always be equal.
func liveBytesOf(t *testing.T, tn tenant, eu string) (used, live int64) {
	t.Helper()
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(), `SELECT u.used_bytes,
		(SELECT coalesce(sum(file_size_bytes), 0) FROM scenes WHERE owner_id = u.id AND archived_at IS NULL) +
		(SELECT coalesce(sum(bytes), 0) FROM clone_jobs WHERE owner_id = u.id)
		FROM external_users u WHERE u.integration_id = $1 AND u.external_user_id = $2`, tn.IntegrationID, eu).Scan(&used, &live))
	return used, live
}

// TestUploadURLsSignTheirDeclaredLength (issue 12, point 1): every signed upload covers the
// declared Content-Length, so the store refuses a body of another size — before the commit,
// and after it, when the URL is still valid and would otherwise let a 32-byte scene grow to
// gigabytes nobody is charged for.
func TestUploadURLsSignTheirDeclaredLength(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "sizer", nil)
	body := splatBytes(4)
	r := do(t, "POST", "/api/v1/uploads/splat-file", a.keys("sizer"),
		map[string]any{"fileName": "scene.splat", "contentType": "application/splat", "fileSize": len(body)})
	require.Equal(t, 200, r.Status, string(r.Raw))
	up, fileURL := r.Body["uploadUrl"].(string), r.Body["fileUrl"].(string)
	require.Contains(t, strings.ToLower(up), "content-length", "the length is a signed header")
	put := signedPut("application/splat")
	require.Equal(t, 403, putUpload(t, up, append(body, splatBytes(1)...), put), "a bigger body than declared")
	require.Equal(t, 403, putUpload(t, up, body[:len(body)-32], put), "a smaller body than declared")
	require.Equal(t, 200, putUpload(t, up, body, put))
	c := do(t, "POST", "/api/v1/splats", a.keys("sizer"), map[string]any{"title": "small", "splatUrl": fileURL})
	require.Equal(t, 201, c.Status, string(c.Raw))

	// The URL outlives the commit: a reused one still writes only the declared size.
	requirePutRefused(t, up, splatBytes(4096), put, "a reused URL cannot grow the committed object")
	// What the scene serves is the sealed copy (objectkeys.Sealed); neither it nor the upload
	// object grew.
	for _, k := range []string{objectkeys.Sealed(keyOf(t, fileURL)), keyOf(t, fileURL)} {
		head, err := store(t).Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(store(t).Bucket), Key: aws.String(k)})
		if err != nil && k == keyOf(t, fileURL) {
			continue // the upload object goes after the commit
		}
		require.NoError(t, err)
		require.EqualValues(t, len(body), aws.ToInt64(head.ContentLength))
	}
	used, live := liveBytesOf(t, a, "sizer")
	require.EqualValues(t, len(body), used)
	require.Equal(t, used, live, "usage equals the sum of live scenes")

	// Each file of a LOD folder is signed with its own declared length.
	folder := lodFolderOf(3)
	lod := requestLOD(t, a, "sizer", folder)
	for _, p := range fixtures.LODPaths(folder) {
		require.Equal(t, 403, putUpload(t, lod.urls[p], append(append([]byte(nil), folder[p]...), 0), signedPut(fixtures.LODContentType(p))), p)
		require.Equal(t, 200, putUpload(t, lod.urls[p], folder[p], signedPut(fixtures.LODContentType(p))), p)
	}
	c = do(t, "POST", "/api/v1/splats", a.keys("sizer"), map[string]any{
		"title": "lod", "splatType": "lod", "splatUrl": lod.manifestURL, "lodFolderKey": lod.folderKey})
	require.Equal(t, 201, c.Status, string(c.Raw))
	for _, p := range fixtures.LODPaths(folder) {
		requirePutRefused(t, lod.urls[p], bytes.Repeat([]byte{1}, len(folder[p])+1<<20), signedPut(fixtures.LODContentType(p)), p)
	}
	used, live = liveBytesOf(t, a, "sizer")
	require.Equal(t, used, live, "usage equals the sum of live scenes")
}
