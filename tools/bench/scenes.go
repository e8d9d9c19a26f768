package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/internal/uploadrules"
	splathost "github.com/splathost/splathost/sdk/go"
)

// Shape of the scene measures.
const (
	// lodFiles is the LOD folder request of the upload measure: the spec's maximum.
	lodFiles = uploadrules.MaxLODFiles
	// lodRuns is how many timed requests (and bare loops) the LOD measure takes the median of.
	lodRuns = 5
	// commitTries concurrent commits race for commitRoom scenes' worth of one customer's storage.
	commitTries, commitRoom = 200, 100
	// commitSplats is the size of each committed .splat, in splats of 32 bytes.
	commitSplats = 32
	// uploadWorkers prepare the commits' uploads (not measured).
	uploadWorkers = 16
)

// benchClient carries the scene measures' requests: large bodies, and many connections for
// the concurrent commits.
var benchClient = &http.Client{
	Timeout:   2 * time.Minute,
	Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute},
}

// HeadersFor are the integrator's headers for customer eu.
func (t Tenant) HeadersFor(eu string) map[string]string {
	h := t.Headers()
	h[externalUserHeader] = eu
	return h
}

// call sends a JSON request through the gateway and decodes the JSON answer; it fails unless
// the status is want.
func call(base, method, path string, headers map[string]string, body any, want int) (map[string]any, error) {
	resp, err := testenv.Do(base, method, path, headers, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.Status != want {
		return nil, fmt.Errorf("%s %s: status %d, want %d: %s", method, path, resp.Status, want, clip(resp.Raw))
	}
	return resp.Body, nil
}

// callID is call for a request whose answer names what it made (a scene's splatId, a session's
// sessionToken): it returns that string field and fails when the answer lacks it.
func callID(base, method, path string, headers map[string]string, body any, want int, field string) (string, error) {
	answer, err := call(base, method, path, headers, body, want)
	if err != nil {
		return "", err
	}
	id, _ := answer[field].(string)
	if id == "" {
		return "", fmt.Errorf("%s %s: no %s in the answer", method, path, field)
	}
	return id, nil
}

// UploadSplat does the first two steps of the interface's upload for customer eu, as the e2e
// tests and integrators do: it asks for a signed URL and PUTs body there. It returns the file
// URL to commit.
func (t Tenant) UploadSplat(gatewayURL, eu string, body []byte) (string, error) {
	return t.UploadFile(gatewayURL, eu, "bench.splat", "application/splat", body)
}

// UploadFile is UploadSplat of a file named name of type contentType.
func (t Tenant) UploadFile(gatewayURL, eu, name, contentType string, body []byte) (string, error) {
	up, err := call(gatewayURL, http.MethodPost, "/api/v1/uploads/splat-file", t.HeadersFor(eu),
		map[string]any{"fileName": name, "contentType": contentType, "fileSize": len(body)}, http.StatusOK)
	if err != nil {
		return "", err
	}
	uploadURL, _ := up["uploadUrl"].(string)
	fileURL, _ := up["fileUrl"].(string)
	if uploadURL == "" || fileURL == "" {
		return "", errors.New("splat-file upload: no uploadUrl or fileUrl")
	}
	req, err := http.NewRequest(http.MethodPut, uploadURL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Cache-Control", uploadrules.CacheControl)
	resp, err := benchClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("signed upload: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("signed upload: status %d", resp.StatusCode)
	}
	return fileURL, nil
}

// NewScene uploads and commits a small .splat for the tenant's customer and returns its id.
func (t Tenant) NewScene(gatewayURL string) (string, error) {
	fileURL, err := t.UploadSplat(gatewayURL, t.ExternalUserID, fixtures.Splat(commitSplats))
	if err != nil {
		return "", err
	}
	return callID(gatewayURL, http.MethodPost, "/api/v1/splats", t.Headers(),
		map[string]any{"title": "Bench scene", "description": "A scene the benchmark reads.", "splatUrl": fileURL}, http.StatusCreated, "splatId")
}

// viewerSession makes the tenant's scene id public and mints a viewer session of it, as a
// visitor's page would (no customer header), returning its token (empty when the answer had
// none): the set-up of every viewer-side measure.
func (t Tenant) viewerSession(gatewayURL, id string) (string, error) {
	_, err := call(gatewayURL, http.MethodPatch, "/api/v1/splats/"+id, t.Headers(), map[string]any{"visibility": "public"}, http.StatusOK)
	if err != nil {
		return "", err
	}
	minted, err := call(gatewayURL, http.MethodPost, "/api/editor/embed-sessions", map[string]string{"Authorization": "Bearer " + t.SecretKey},
		map[string]any{"publicKey": t.PublicKey, "type": "viewer", "splatId": id}, http.StatusCreated)
	token, _ := minted["sessionToken"].(string)
	return token, err
}

// sceneRead measures P1: GET /api/v1/splats/{id} through the gateway against the bare server's
// read of the same row.
func (r *runner) sceneRead(ctx context.Context, st *testenv.Stack, mode string, t Tenant, row *Row) {
	id, err := t.NewScene(st.State.GatewayURL)
	if err != nil {
		row.Err = fmt.Errorf("scene setup: %w", err)
		return
	}
	check := func(name, base, path string, extra map[string]string) error {
		return t.checkID(name, base, path, extra, "splat", id)
	}
	r.compare(ctx, st, mode, t, row, "/api/v1/splats/"+id, BareScenePath+id, check, Request{})
}

// lodRequestBody is a lod-folder request of n files: the manifest and n-1 cells.
func lodRequestBody(n int) []byte {
	files := make([]map[string]any, n)
	files[0] = map[string]any{"relativePath": uploadrules.LODManifest, "contentType": "application/json", "fileSize": 2048}
	for i := 1; i < n; i++ {
		files[i] = map[string]any{"relativePath": fmt.Sprintf("cells/%d/%05d.webp", i%8, i), "contentType": "image/webp", "fileSize": 65536}
	}
	b, _ := json.Marshal(map[string]any{"files": files})
	return b
}

// lodRequest sends one lod-folder request and returns its wall time (until the whole answer is
// read) and the answer's size; it checks the answer signs every file.
func lodRequest(ctx context.Context, gatewayURL string, headers map[string]string, body []byte, files int) (time.Duration, int, error) {
	status, raw, took, err := timedPost(ctx, gatewayURL+"/api/v1/uploads/lod-folder", headers, body)
	if err != nil {
		return 0, 0, err
	}
	if status != http.StatusOK {
		return 0, 0, fmt.Errorf("lod-folder: status %d: %s", status, clip(raw))
	}
	var out splathost.FolderUpload // the SDK's, as a client decodes it
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, 0, fmt.Errorf("lod-folder: %w", err)
	}
	if len(out.Uploads) != files || out.Uploads[files-1].UploadURL == "" {
		return 0, 0, fmt.Errorf("lod-folder: %d signed uploads, want %d", len(out.Uploads), files)
	}
	return took, len(raw), nil
}

// presignLoop is the bare limit of the lod-folder request: presigning the same n PUT URLs with
// the same aws-sdk-go-v2 presigner and the same signed headers, in a plain loop.
func presignLoop(ctx context.Context, store *objectstore.Store, prefix string, n int) (time.Duration, error) {
	start := time.Now()
	for i := 0; i < n; i++ {
		in := &s3.PutObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(fmt.Sprintf("%scells/%d/%05d.webp", prefix, i%8, i)),
			ContentType: aws.String("image/webp"), CacheControl: aws.String(uploadrules.CacheControl)}
		if _, err := store.Presign.PresignPutObject(ctx, in, s3.WithPresignExpires(time.Hour)); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// lodUpload measures P6: one 20 000-file POST /api/v1/uploads/lod-folder through the gateway
// against presigning as many URLs in a loop, the median of lodRuns each, alternated.
func (r *runner) lodUpload(ctx context.Context, st *testenv.Stack, t Tenant, row *Row) {
	store, err := objectstore.New(st.State.Config())
	if err != nil {
		row.Err = err
		return
	}
	body := lodRequestBody(lodFiles)
	// The bare keys have the product's shape: integration, customer, kind, ticket, path.
	prefix := "i/" + t.IntegrationID + "/u/" + t.UserID + "/l/0123456789abcdef0123456789abcdef01234567/"
	var prod, bare []time.Duration
	var size int
	for i := -1; i < lodRuns; i++ { // run -1 warms both up
		took, n, err := lodRequest(ctx, st.State.GatewayURL, t.Headers(), body, lodFiles)
		if err != nil {
			row.Err = err
			return
		}
		loop, err := presignLoop(ctx, store, prefix, lodFiles)
		if err != nil {
			row.Err = fmt.Errorf("bare presign loop: %w", err)
			return
		}
		if i >= 0 {
			prod, bare, size = append(prod, took), append(bare, loop), n
		}
	}
	row.Value, row.Bare = ms(median(prod)), ms(median(bare))
	row.Notes = fmt.Sprintf("median of %d; request %.1f MiB, answer %.1f MiB; gateway %.0f-%.0f ms, bare %.0f-%.0f ms",
		lodRuns, float64(len(body))/(1<<20), float64(size)/(1<<20), ms(slices.Min(prod)), ms(slices.Max(prod)),
		ms(slices.Min(bare)), ms(slices.Max(bare)))
}

// commitRace measures commits under contention: commitTries concurrent POST /api/v1/splats of
// pre-uploaded files by one customer with room for commitRoom of them. rate gets the commits
// answered per second; overshoot the bytes the customer ends up over its allocation, which must
// be none.
func (r *runner) commitRace(ctx context.Context, st *testenv.Stack, mode string, t Tenant, rate, overshoot *Row) {
	fail := func(err error) {
		rate.Err, overshoot.Err = err, err
	}
	gw := st.State.GatewayURL
	eu := "bench-committer-" + mode
	file := fixtures.Splat(commitSplats)
	size := int64(len(file))
	if _, err := call(gw, http.MethodPut, "/api/v1/external-user", t.HeadersFor(eu),
		map[string]any{"limitBytes": size * commitRoom}, http.StatusOK); err != nil {
		fail(err)
		return
	}
	// Upload every file first (not measured), as many clients would have before committing.
	urls := make([]string, commitTries)
	if err := forEach(commitTries, uploadWorkers, func(i int) (err error) {
		urls[i], err = t.UploadSplat(gw, eu, file)
		return err
	}); err != nil {
		fail(fmt.Errorf("uploads before the commits: %w", err))
		return
	}
	errs := make([]error, commitTries)
	var wg sync.WaitGroup

	r.o.Log.Info("racing commits", "tries", commitTries, "room", commitRoom)
	statuses := make([]int, commitTries)
	latencies := make([]time.Duration, commitTries)
	start := make(chan struct{})
	for i := range commitTries {
		wg.Go(func() {
			<-start
			statuses[i], latencies[i], errs[i] = postCommit(ctx, gw, t.HeadersFor(eu), fmt.Sprintf("race %d", i), urls[i])
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		fail(fmt.Errorf("commits: %w", err))
		return
	}
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	slices.Sort(latencies)
	rate.Value = float64(commitTries) / wall.Seconds()
	rate.Notes = fmt.Sprintf("%d in %.0f ms: %s; p50 %s p99 %s", commitTries, ms(wall), fmtCounts(counts),
		fmtLatency(latencies[len(latencies)/2]), fmtLatency(latencies[len(latencies)*99/100]))

	used, limit, live, scenes, err := customerUsage(ctx, st.State.PostgresURL, t.IntegrationID, eu)
	if err != nil {
		overshoot.Err = err
		return
	}
	overshoot.Value = float64(max(0, used-limit))
	overshoot.Notes = fmt.Sprintf("used_bytes %d of %d allowed; %d live scenes holding %d bytes", used, limit, scenes, live)
	// These are faults, not a slow machine: the report then counts as broken.
	if used > limit || used != live || counts[http.StatusCreated] != commitRoom || counts[http.StatusRequestEntityTooLarge] != commitTries-commitRoom {
		r.problems = append(r.problems, fmt.Errorf("commit race (%s): want %d×201 and %d×413 and used_bytes = live bytes ≤ %d; got %s, used_bytes %d, live bytes %d",
			mode, commitRoom, commitTries-commitRoom, limit, fmtCounts(counts), used, live))
	}
}

func fmtCounts(counts map[int]int) string {
	var parts []string
	for code, n := range counts {
		parts = append(parts, fmt.Sprintf("%d×%d", n, code))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// customerUsage reads a customer's storage counter and allocation, and what its live scenes
// actually hold, straight from Postgres.
func customerUsage(ctx context.Context, pgURL, integrationID, eu string) (used, limit, live, scenes int64, err error) {
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer conn.Close(context.Background())
	err = conn.QueryRow(ctx, `SELECT u.used_bytes, u.limit_bytes,
		(SELECT coalesce(sum(file_size_bytes), 0) FROM scenes WHERE owner_id = u.id AND archived_at IS NULL),
		(SELECT count(*) FROM scenes WHERE owner_id = u.id AND archived_at IS NULL)
		FROM external_users u WHERE u.integration_id = $1 AND u.external_user_id = $2`, integrationID, eu).
		Scan(&used, &limit, &live, &scenes)
	return used, limit, live, scenes, err
}

// postCommit commits the upload at fileURL as title with headers; it returns the answer's status
// and how long the request took (the body is read, not decoded).
func postCommit(ctx context.Context, gw string, headers map[string]string, title, fileURL string) (int, time.Duration, error) {
	body, _ := json.Marshal(map[string]any{"title": title, "splatUrl": fileURL})
	status, _, took, err := timedPost(ctx, gw+"/api/v1/splats", headers, body)
	return status, took, err
}

// timedPost POSTs the JSON body to url with headers on the bench's client and returns the
// answer's status and body, and the wall time until the whole answer was read: what the
// measures that time one request (or check its status without decoding) share.
func timedPost(ctx context.Context, url string, headers map[string]string, body []byte) (int, []byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := benchClient.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, time.Since(start), err
}

// clip cuts an answer body to what an error message should quote.
func clip(raw []byte) []byte {
	if len(raw) > 300 {
		return raw[:300]
	}
	return raw
}
