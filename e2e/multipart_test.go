//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	splathost "github.com/splathost/splathost/sdk/go"
	"github.com/splathost/splathost/workflows"
)

// Resumable multipart uploads (contract item 14) against the real stack and versitygw.

const (
	mpPartSize = 16 << 20 // the service's part size for files up to 156 GiB
	mpPath     = "/api/v1/uploads/splat-file"
)

// startMultipart asks for a multipart upload of a .splat of size bytes and returns the answer.
func startMultipart(t *testing.T, tn tenant, eu string, size int64) map[string]any {
	t.Helper()
	r := do(t, "POST", mpPath, tn.keys(eu),
		map[string]any{"fileName": "big.splat", "contentType": "application/splat", "fileSize": size, "multipart": true})
	require.Equal(t, 200, r.Status, string(r.Raw))
	return r.Body
}

// partURLs maps each part number of an answer's parts (or missingParts) to its signed URL.
func partURLs(t *testing.T, list any) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, p := range list.([]any) {
		m := p.(map[string]any)
		out[int(m["partNumber"].(float64))] = m["uploadUrl"].(string)
	}
	return out
}

// putPart PUTs one part and returns the status and the ETag the store answered.
func putPart(t *testing.T, u string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest("PUT", u, bytes.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, strings.Trim(resp.Header.Get("ETag"), `"`)
}

// requirePartRefused asserts the store takes no part at u: an error status, or the connection
// reset while the body was still being sent (the store answers from the headers).
func requirePartRefused(t *testing.T, u string, body []byte, msg string) {
	t.Helper()
	if status := refusedPut(t, u, body, nil, msg); status != 0 {
		require.GreaterOrEqual(t, status, 400, msg)
	}
}

// storedPart is one part GET …/{uploadId} lists as stored.
type storedPart struct {
	size int64
	etag string
}

// storedParts is GET …/{uploadId}'s stored parts, by part number.
func storedParts(t *testing.T, tn tenant, eu, id string) map[int]storedPart {
	t.Helper()
	r := do(t, "GET", mpPath+"/"+id, tn.keys(eu), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	out := map[int]storedPart{}
	for _, p := range r.Body["parts"].([]any) {
		m := p.(map[string]any)
		out[int(m["partNumber"].(float64))] = storedPart{int64(m["size"].(float64)), m["etag"].(string)}
	}
	return out
}

// partMD5 is the hex MD5 of n bytes of the file at off: the etag of a part stored intact.
func partMD5(t *testing.T, path string, off, n int64) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := md5.New()
	_, err = io.Copy(h, io.NewSectionReader(f, off, n))
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// storeUploads lists the store's open multipart uploads of an upload folder: they are created
// at its sealed copy (objectkeys.Sealed).
func storeUploads(t *testing.T, st *objectstore.Store, prefix string) []string {
	t.Helper()
	out, err := st.Client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{
		Bucket: aws.String(st.Bucket), Prefix: aws.String(objectkeys.Sealed(prefix))})
	require.NoError(t, err)
	var ids []string
	for _, u := range out.Uploads {
		ids = append(ids, aws.ToString(u.UploadId))
	}
	return ids
}

// partCounter is a transport that counts the part PUTs it carries, by part number.
type partCounter struct {
	mu   sync.Mutex
	puts map[int]int
}

// RoundTrip implements http.RoundTripper.
func (p *partCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut {
		if n, err := strconv.Atoi(r.URL.Query().Get("partNumber")); err == nil {
			p.mu.Lock()
			p.puts[n]++
			p.mu.Unlock()
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (p *partCounter) take() map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.puts
	p.puts = map[int]int{}
	return out
}

// uploadWithDrop uploads the file at path (size bytes) in parts through c for customer eu, and
// drops the connection once a third of the bytes are sent; it returns the upload's id, to
// resume.
func uploadWithDrop(t *testing.T, c *splathost.Client, eu, path string, size int64) string {
	t.Helper()
	var uploadID string
	dropCtx, drop := context.WithCancel(context.Background())
	_, err := c.UploadFile(dropCtx, eu, path, splathost.UploadOptions{Concurrency: 2, Multipart: true,
		OnUploadStarted: func(id string) { uploadID = id },
		OnProgress: func(p splathost.Progress) {
			if p.BytesDone > size/3 {
				drop()
			}
		}})
	drop()
	require.ErrorIs(t, err, context.Canceled)
	require.NotEmpty(t, uploadID)
	return uploadID
}

// TestMultipartUploadResumesAfterADrop: a 300 MiB PLY goes up in parts through the Go SDK, the
// connection drops a third of the way, the upload resumes from its uploadId without sending a
// stored part again, completes and commits, and the asset route serves back the same bytes.
func TestMultipartUploadResumesAfterADrop(t *testing.T) {
	in, _ := sdkTenant(t, splathost.PlanPro, 2<<30)
	counter := &partCounter{puts: map[int]int{}}
	c, err := splathost.New(env.URL, splathost.WithKeys(in.PublicKey, in.SecretKey), splathost.WithHTTPClient(&http.Client{Transport: counter}))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = c.PutCustomer(ctx, "big", splathost.CustomerUpdate{})
	require.NoError(t, err)

	// A valid PLY (SH degree 3, 248 bytes a Gaussian) of about 300 MiB, hashed as it is written.
	path := filepath.Join(t.TempDir(), "large.ply")
	f, err := os.Create(path)
	require.NoError(t, err)
	h := sha256.New()
	require.NoError(t, fixtures.Gen{Seed: 7}.WriteTrainingPLY(io.MultiWriter(f, h), (300<<20)/fixtures.TrainingPLYStride(3), 3))
	require.NoError(t, f.Close())
	want := hex.EncodeToString(h.Sum(nil))
	st, err := os.Stat(path)
	require.NoError(t, err)
	size := st.Size()
	require.Greater(t, size, int64(splathost.MultipartThreshold))
	parts := int((size + mpPartSize - 1) / mpPartSize)

	uploadID := uploadWithDrop(t, c, "big", path, size)
	first := counter.take()
	tn := tenant{PublicKey: in.PublicKey, SecretKey: in.SecretKey}
	stored := storedParts(t, tn, "big", uploadID)
	require.NotEmpty(t, stored, "some parts were stored before the drop")
	require.Less(t, len(stored), parts, "the drop left parts to send")
	for n := range stored {
		require.Contains(t, first, n, "a stored part was sent")
	}

	// The resume sends each missing part once, no intact stored part, and again a stored part
	// whose etag is not the MD5 of the file's bytes (versitygw keeps a part cut off by the drop
	// at its full size with other bytes). A part whose bytes were all sent when the drop came
	// may also land after the listing above: a part not in it that the resume skips must have
	// been sent before. The resume's progress starts at the parts it skips.
	var firstReport atomic.Int64
	firstReport.Store(-1)
	res, err := c.UploadFile(ctx, "big", path, splathost.UploadOptions{UploadID: uploadID, Concurrency: 2, Title: "Large",
		OnProgress: func(p splathost.Progress) { firstReport.CompareAndSwap(-1, p.BytesDone) }})
	require.NoError(t, err)
	resent := counter.take()
	require.NotEmpty(t, resent)
	var skippedBytes int64
	damaged := 0
	for n := 1; n <= parts; n++ {
		length := min(mpPartSize, size-int64(n-1)*mpPartSize)
		part, wasStored := stored[n]
		switch {
		case wasStored && part.etag == partMD5(t, path, int64(n-1)*mpPartSize, length):
			require.Zero(t, resent[n], "part %d was stored intact and sent again", n)
		case wasStored:
			damaged++
			require.Equal(t, 1, resent[n], "damaged part %d", n)
		case resent[n] == 0:
			require.Contains(t, first, n, "part %d was never sent, yet the resume skipped it", n)
		default:
			require.Equal(t, 1, resent[n], "part %d", n)
		}
		if resent[n] == 0 {
			skippedBytes += length
		}
	}
	t.Logf("%d of %d parts stored at the drop, %d of them damaged; %d sent by the resume", len(stored), parts, damaged, len(resent))
	require.Equal(t, skippedBytes, firstReport.Load(), "the resume's progress starts at the parts it skips")
	require.Equal(t, size, res.Splat.FileSizeBytes)
	require.EqualValues(t, size, res.Usage.UsedBytes, "charged once, the declared size")

	// The bytes the asset route serves are the file's.
	resp, err := http.Get(res.Splat.SplatURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	got := sha256.New()
	n, err := io.Copy(got, resp.Body)
	require.NoError(t, err)
	require.Equal(t, size, n)
	require.Equal(t, want, hex.EncodeToString(got.Sum(nil)))

	// The upload is spent: completing or aborting it again is a conflict, not a second file.
	requireEnvelope(t, do(t, "DELETE", mpPath+"/"+uploadID, tn.keys("big"), nil), 409)
	// Done with it: its rendition of a 300 MiB scene need not hold the shared stack's CPU.
	require.NoError(t, c.DeleteSplat(ctx, "big", res.SplatID))
}

// TestMultipartUploadRefusesAbuse: the limits, part sizes, part numbers, the commit before the
// complete, completes with missing, wrong or duplicate parts, and other tenants' ids.
func TestMultipartUploadRefusesAbuse(t *testing.T) {
	a, b := newTenant(t), newTenant(t)
	ensureCustomer(t, a, "alice", nil)
	ensureCustomer(t, a, "bob", nil)
	ensureCustomer(t, b, "alice", nil)
	st := store(t)

	// Limits.
	for _, tc := range []struct {
		body map[string]any
		hint string
	}{
		{map[string]any{"fileSize": 5<<20 - 1, "multipart": true}, "at least 5242880"},
		{map[string]any{"fileSize": 20<<30 + 1, "multipart": true}, "fileSize"},
		{map[string]any{"fileSize": 2<<30 + 1}, "multipart: true"},
		{map[string]any{"fileSize": 2<<30 + 1, "multipart": false}, "multipart: true"},
		{map[string]any{"fileSize": 6 << 20, "multipart": "yes"}, "multipart: must be a boolean"},
		{map[string]any{"fileSize": 6 << 20, "multipart": true, "partSize": 5 << 20}, "partSize: unknown field"},
	} {
		body := map[string]any{"fileName": "big.splat", "contentType": "application/splat"}
		for k, v := range tc.body {
			body[k] = v
		}
		issues := requireEnvelope(t, do(t, "POST", mpPath, a.keys("alice"), body), 400)
		require.True(t, issuesMention(issues, tc.hint), "%v: %v", tc.body, issues)
	}
	// 20 GiB is allowed in parts (and aborted at once).
	huge := startMultipart(t, a, "alice", 20<<30)
	require.Len(t, huge["parts"], 1280)
	require.EqualValues(t, mpPartSize, huge["partSize"])
	require.Equal(t, 200, do(t, "DELETE", mpPath+"/"+huge["uploadId"].(string), a.keys("alice"), nil).Status)

	// A two-part upload: 16 MiB and 4 MiB.
	const size = 20 << 20
	file := fixtures.Splat(size / fixtures.SplatRecordSize)
	up := startMultipart(t, a, "alice", size)
	id, fileURL := up["uploadId"].(string), up["fileUrl"].(string)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT`, up["expiresAt"])
	require.NotContains(t, id, "/", "our id, not the store's")
	urls := partURLs(t, up["parts"])
	require.Len(t, urls, 2)
	require.Contains(t, urls[1], "uploadId=", "the part URL names the store's upload")
	require.NotContains(t, urls[1], url.QueryEscape(id))
	p1, p2 := file[:mpPartSize], file[mpPartSize:]

	// Parts of another size than signed are refused by the store: bigger (a reused URL), smaller,
	// and the last part's URL with a full part.
	requirePutRefused(t, urls[1], append(slices.Clone(p1), make([]byte, 1<<20)...), nil, "bigger part")
	requirePutRefused(t, urls[1], p1[:mpPartSize-1], nil, "smaller part")
	requirePutRefused(t, urls[2], p1, nil, "a full part on the last part's URL")
	// A part number of another part (or out of range) breaks the signature.
	other := strings.Replace(urls[2], "partNumber=2", "partNumber=3", 1)
	require.NotEqual(t, urls[2], other)
	requirePutRefused(t, other, p2, nil, "part number out of range")
	require.Empty(t, storedParts(t, a, "alice", id), "nothing refused was stored")

	// Only part 1 uploaded: the commit and the complete are refused.
	status, etag1 := putPart(t, urls[1], p1)
	require.Equal(t, 200, status)
	require.NotEmpty(t, etag1)
	require.Equal(t, map[int]storedPart{1: {mpPartSize, etag1}}, storedParts(t, a, "alice", id))
	issues := requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("alice"), map[string]any{"title": "early", "splatUrl": fileURL}), 400)
	require.True(t, issuesMention(issues, "not completed"), "%v", issues)
	complete := func(tn tenant, eu, id string, parts any) map[string]any {
		r := do(t, "POST", mpPath+"/"+id+"/complete", tn.keys(eu), map[string]any{"parts": parts})
		if r.Status != 200 {
			return map[string]any{"status": r.Status, "issues": requireEnvelope(t, r, r.Status)}
		}
		return r.Body
	}
	part := func(n int, etag string) map[string]any { return map[string]any{"partNumber": n, "etag": etag} }
	for _, tc := range []struct {
		name  string
		parts any
		hint  string
	}{
		{"one part missing from the list", []any{part(1, etag1)}, "has 2 parts"},
		{"a part not uploaded", []any{part(1, etag1), part(2, "abc")}, "part 2 was not uploaded"},
		{"a wrong etag", []any{part(1, "0123456789abcdef0123456789abcdef"), part(2, "x")}, "another etag"},
		{"a duplicate part", []any{part(1, etag1), part(1, etag1)}, "named twice"},
		{"part 0", []any{part(0, etag1), part(1, etag1)}, "partNumber: must be an integer from 1 to 2"},
		{"part 3", []any{part(1, etag1), part(3, etag1)}, "partNumber: must be an integer from 1 to 2"},
		{"no etag", []any{map[string]any{"partNumber": 1}, part(2, "x")}, "etag"},
		{"not an array", "parts", "must be an array"},
		{"an extra field", []any{part(1, etag1), map[string]any{"partNumber": 2, "etag": "x", "size": 5}}, "size: unknown field"},
	} {
		res := complete(a, "alice", id, tc.parts)
		require.Equal(t, 400, res["status"], tc.name)
		require.True(t, issuesMention(res["issues"].([]any), tc.hint), "%s: %v", tc.name, res["issues"])
	}
	issues = requireEnvelope(t, do(t, "POST", mpPath+"/"+id+"/complete", a.keys("alice"), "not json"), 400)
	require.NotEmpty(t, issues)

	// Another tenant's id, another customer's, and an id that does not exist: the same 404.
	missing := do(t, "GET", mpPath+"/"+ids.New(), a.keys("alice"), nil)
	requireEnvelope(t, missing, 404)
	for _, who := range []struct {
		tn tenant
		eu string
	}{{b, "alice"}, {a, "bob"}} {
		for _, r := range []struct{ method, path string }{{"GET", mpPath + "/" + id}, {"POST", mpPath + "/" + id + "/complete"}, {"DELETE", mpPath + "/" + id}} {
			var body any
			if r.method == "POST" {
				body = map[string]any{"parts": []any{part(1, etag1)}}
			}
			got := do(t, r.method, r.path, who.tn.keys(who.eu), body)
			requireEnvelope(t, got, 404)
			require.Equal(t, missing.Body["message"], got.Body["message"], "a 404 tells nothing")
		}
	}
	// Nor does the other tenant's commit of the fileUrl get anywhere.
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", b.keys("alice"), map[string]any{"title": "x", "splatUrl": fileURL}), 403)

	// A part overwritten with other bytes of the same size changes its etag: completing with
	// the old one is refused.
	status, _ = putPart(t, urls[2], make([]byte, len(p2)))
	require.Equal(t, 200, status)
	status, etag2 := putPart(t, urls[2], p2)
	require.Equal(t, 200, status)
	res := complete(a, "alice", id, []any{part(2, "0"+etag2[1:]), part(1, etag1)})
	require.Equal(t, 400, res["status"])

	// The right parts, in any order and with quoted etags: completed, exactly the declared size.
	res = complete(a, "alice", id, []any{part(2, `"`+etag2+`"`), part(1, etag1)})
	require.Equal(t, "success", res["status"], "%v", res)
	require.Equal(t, fileURL, res["fileUrl"])
	// A multipart upload is created at its sealed key (objectkeys.Sealed): nothing writes there
	// once it is completed.
	head, err := st.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(objectkeys.Sealed(keyOf(t, fileURL)))})
	require.NoError(t, err)
	require.EqualValues(t, size, aws.ToInt64(head.ContentLength))
	require.Equal(t, "application/splat", aws.ToString(head.ContentType))
	// A retried complete answers the same; the status says completed; the part URLs are dead.
	res = complete(a, "alice", id, []any{part(1, etag1), part(2, etag2)})
	require.Equal(t, fileURL, res["fileUrl"], "%v", res)
	r := do(t, "GET", mpPath+"/"+id, a.keys("alice"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "completed", r.Body["state"])
	requirePartRefused(t, urls[1], p1, "no part goes to a completed upload")

	// Commit: charged the declared size; the upload is then spent.
	c := do(t, "POST", "/api/v1/splats", a.keys("alice"), map[string]any{"title": "big", "splatUrl": fileURL})
	require.Equal(t, 201, c.Status, string(c.Raw))
	require.EqualValues(t, size, c.Body["splat"].(map[string]any)["fileSizeBytes"])
	requireEnvelope(t, do(t, "GET", mpPath+"/"+id, a.keys("alice"), nil), 409)
	requireEnvelope(t, do(t, "DELETE", mpPath+"/"+id, a.keys("alice"), nil), 409)

	// Abort: the store forgets the upload and its parts; the id is then unknown.
	up = startMultipart(t, a, "alice", size)
	id2 := up["uploadId"].(string)
	urls = partURLs(t, up["parts"])
	status, _ = putPart(t, urls[1], p1)
	require.Equal(t, 200, status)
	prefix := ticketPrefix(keyOf(t, up["fileUrl"].(string)))
	require.Len(t, storeUploads(t, st, prefix), 1)
	r = do(t, "DELETE", mpPath+"/"+id2, a.keys("alice"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Empty(t, storeUploads(t, st, prefix))
	requireEnvelope(t, do(t, "GET", mpPath+"/"+id2, a.keys("alice"), nil), 404)
	requirePartRefused(t, urls[2], p2, "no part goes to an aborted upload")
	require.False(t, ticketExists(t, prefix))
}

// TestMultipartResumeFromStatusAlone: a client that kept only the uploadId (a reloaded page)
// gets fresh signed URLs for exactly the missing parts from GET.
func TestMultipartResumeFromStatusAlone(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "carol", nil)
	const size = 40 << 20 // parts of 16, 16 and 8 MiB
	file := fixtures.Splat(size / fixtures.SplatRecordSize)
	up := startMultipart(t, a, "carol", size)
	id := up["uploadId"].(string)
	status, _ := putPart(t, partURLs(t, up["parts"])[2], file[mpPartSize:2*mpPartSize])
	require.Equal(t, 200, status)

	r := do(t, "GET", mpPath+"/"+id, a.keys("carol"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "uploading", r.Body["state"])
	require.EqualValues(t, size, r.Body["fileSize"])
	require.Equal(t, up["fileUrl"], r.Body["fileUrl"])
	fresh := partURLs(t, r.Body["missingParts"])
	require.Len(t, fresh, 2)
	require.Contains(t, fresh, 1)
	require.Contains(t, fresh, 3)
	var parts []any
	for n, u := range fresh {
		status, etag := putPart(t, u, file[(n-1)*mpPartSize:min(n*mpPartSize, size)])
		require.Equal(t, 200, status, "part %d", n)
		parts = append(parts, map[string]any{"partNumber": n, "etag": etag})
	}
	r = do(t, "GET", mpPath+"/"+id, a.keys("carol"), nil)
	require.Empty(t, r.Body["missingParts"])
	for _, p := range r.Body["parts"].([]any) {
		m := p.(map[string]any)
		if m["partNumber"].(float64) == 2 {
			parts = append(parts, map[string]any{"partNumber": 2, "etag": m["etag"]})
			require.EqualValues(t, mpPartSize, m["size"])
		}
	}
	c := do(t, "POST", mpPath+"/"+id+"/complete", a.keys("carol"), map[string]any{"parts": parts})
	require.Equal(t, 200, c.Status, string(c.Raw))
	sc := do(t, "POST", "/api/v1/splats", a.keys("carol"), map[string]any{"title": "resumed", "splatUrl": up["fileUrl"]})
	require.Equal(t, 201, sc.Status, string(sc.Raw))
	got := fetchAsset(t, "GET", sc.Body["splat"].(map[string]any)["splatUrl"].(string), nil)
	require.Equal(t, 200, got.status)
	require.Equal(t, sha256.Sum256(file), sha256.Sum256(got.body))
}

// TestOrphanSweepAbortsMultipartUploads: an expired, uncommitted multipart upload loses its
// store state (parts) and its ticket; a completed but uncommitted one its object.
// sweepSetup is a tenant with the customer eu, the store, and a two-part .splat of size bytes.
func sweepSetup(t *testing.T, eu string) (tenant, *objectstore.Store, []byte) {
	t.Helper()
	a := newTenant(t)
	ensureCustomer(t, a, eu, nil)
	return a, store(t), fixtures.Splat(sweepFileSize / fixtures.SplatRecordSize)
}

// sweepFileSize is the file of sweepSetup: two parts.
const sweepFileSize = 20 << 20

// runOrphanSweep runs the orphan sweep once, now, and waits for it.
func runOrphanSweep(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "orphan-sweep-" + ids.New(), TaskQueue: env.Config.TaskQueue}, workflows.SweepOrphanUploads, workflows.SweepInput{})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))
}

func TestOrphanSweepAbortsMultipartUploads(t *testing.T) {
	a, st, file := sweepSetup(t, "dave")
	const size = sweepFileSize

	open := startMultipart(t, a, "dave", size)
	status, _ := putPart(t, partURLs(t, open["parts"])[1], file[:mpPartSize])
	require.Equal(t, 200, status)
	openPrefix := ticketPrefix(keyOf(t, open["fileUrl"].(string)))
	require.Len(t, storeUploads(t, st, openPrefix), 1)

	done := startMultipart(t, a, "dave", size)
	urls := partURLs(t, done["parts"])
	_, e1 := putPart(t, urls[1], file[:mpPartSize])
	_, e2 := putPart(t, urls[2], file[mpPartSize:])
	r := do(t, "POST", mpPath+"/"+done["uploadId"].(string)+"/complete", a.keys("dave"), map[string]any{"parts": []any{
		map[string]any{"partNumber": 1, "etag": e1}, map[string]any{"partNumber": 2, "etag": e2}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	doneKey := keyOf(t, done["fileUrl"].(string))
	require.False(t, objectGone(t, st, objectkeys.Sealed(doneKey)), "the completed upload is stored at its sealed key")

	fresh := startMultipart(t, a, "dave", size)
	freshPrefix := ticketPrefix(keyOf(t, fresh["fileUrl"].(string)))

	backdate(t, openPrefix, "3 hours")
	backdate(t, ticketPrefix(doneKey), "3 hours")
	runOrphanSweep(t)

	require.Empty(t, storeUploads(t, st, openPrefix), "the store's multipart state is aborted")
	require.False(t, ticketExists(t, openPrefix))
	require.True(t, objectGone(t, st, objectkeys.Sealed(doneKey)))
	require.False(t, ticketExists(t, ticketPrefix(doneKey)))
	// The fresh upload is untouched.
	require.True(t, ticketExists(t, freshPrefix))
	require.Len(t, storeUploads(t, st, freshPrefix), 1)
	requireEnvelope(t, do(t, "GET", mpPath+"/"+open["uploadId"].(string), a.keys("dave"), nil), 404)
}

// TestCLIUploadInPartsAndResume: `splathostctl upload --multipart` uploads in parts, and
// `--resume ID` finishes an upload another client started, with the file's exact bytes.
func TestCLIUploadInPartsAndResume(t *testing.T) {
	ctx := context.Background()
	c, keys := cliCustomer(t, "cli")
	dir := t.TempDir()
	body := fixtures.Splat((20 << 20) / fixtures.SplatRecordSize)
	path := filepath.Join(dir, "parts.splat")
	require.NoError(t, os.WriteFile(path, body, 0o644))

	var whole splathost.CommitResult
	ctlJSON(t, &whole, append([]string{"upload", path, "--multipart", "--title", "parts"}, keys...)...)
	require.EqualValues(t, len(body), whole.Splat.FileSizeBytes)

	// Another client started the upload and stored part 2 only.
	up, err := c.StartMultipartUpload(ctx, "cli", splathost.FileUploadRequest{FileName: "parts.splat", ContentType: "application/splat", FileSize: int64(len(body))})
	require.NoError(t, err)
	_, err = c.PutPart(ctx, up.Parts[1].UploadURL, int64(len(body)-mpPartSize), func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(body[mpPartSize:])), nil
	})
	require.NoError(t, err)
	var resumed splathost.CommitResult
	ctlJSON(t, &resumed, append([]string{"upload", path, "--resume", up.UploadID}, keys...)...)
	got := fetchAsset(t, "GET", resumed.Splat.SplatURL, nil)
	require.Equal(t, 200, got.status)
	require.Equal(t, sha256.Sum256(body), sha256.Sum256(got.body))

	// A resume of an unknown upload fails with the 404.
	e := ctlError(t, append([]string{"upload", path, "--resume", ids.New()}, keys...)...)
	require.EqualValues(t, 404, e["status"])
}
