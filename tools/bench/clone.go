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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/services/scene"
)

// Shape of the clone measures (P5).
const (
	// cloneLODObjects is the size of the cloned LOD folder, manifest included.
	cloneLODObjects = 5000
	// cloneLODRuns is how many timed clones (and bare copy loops) of the LOD folder the measure
	// takes the median of, after one untimed warm-up pair: five, since on a shared 2-core machine
	// one pair's two sides differ by up to 2× either way.
	cloneLODRuns = 5
	// cloneFileBytes is the size of the single-file source: 6 250 000 records of 32 bytes.
	cloneFileBytes = 200_000_000
	// cloneFileRuns is how many clones (and bare copies) of the single file are timed.
	cloneFileRuns = 3
	// clonePoll is how often a 202 clone job is polled.
	clonePoll = 100 * time.Millisecond
	// cloneDeadline bounds one clone job, POST to success.
	cloneDeadline = 2 * time.Minute
	// defaultCloneConcurrency is the product's default, used if the configuration has none.
	defaultCloneConcurrency = 32
)

// cloneBench is what both clone measures share: the gateway, the store and the cloning
// customer (its headers and record id).
type cloneBench struct {
	r     *runner
	gw    string
	cfgAB string // asset base URL, to turn a file URL into its key
	store *objectstore.Store
	conc  int
	t     Tenant
	eu    string
	uid   string
	h     map[string]string
}

// cloneJobs measures P5: clone jobs through the gateway against the store's own CopyObject. lod
// gets a 5 000-object LOD folder's clone rate (objects/s) against a plain pool of as many
// CopyObject goroutines as the job uses; file gets a 200 MB file's clone time against one raw
// CopyObject of it. The sources are uploaded and committed first (not timed); every scratch copy
// is deleted afterwards (best effort).
func (r *runner) cloneJobs(ctx context.Context, st *testenv.Stack, mode string, t Tenant, lod, file *Row) {
	cfg := st.State.Config()
	store, err := objectstore.New(cfg)
	if err != nil {
		lod.Err, file.Err = err, err
		return
	}
	c := &cloneBench{r: r, gw: st.State.GatewayURL, cfgAB: cfg.AssetBase(), store: store, conc: cfg.CloneConcurrency,
		t: t, eu: "bench-cloner-" + mode}
	if c.conc <= 0 {
		c.conc = defaultCloneConcurrency
	}
	c.h = t.HeadersFor(c.eu)
	// Room for the 200 MB source and its clones, no scene cap.
	body, err := call(c.gw, http.MethodPut, "/api/v1/external-user", c.h,
		map[string]any{"limitBytes": int64(4) << 30, "maxSplats": nil}, http.StatusOK)
	if err != nil {
		lod.Err, file.Err = fmt.Errorf("clone setup: %w", err), fmt.Errorf("clone setup: %w", err)
		return
	}
	eu, _ := body["externalUser"].(map[string]any)
	if c.uid, _ = eu["id"].(string); c.uid == "" {
		err := errors.New("clone setup: the customer has no id")
		lod.Err, file.Err = err, err
		return
	}
	defer c.cleanup()
	if err := c.lodClone(ctx, lod); err != nil {
		lod.Err = err
	}
	if err := c.fileClone(ctx, file); err != nil {
		file.Err = err
	}
}

// clonePhase runs only the clone measures (-clone-only), on an all-in-one stack of their own,
// as the full run takes them (the worker in the product process).
func (r *runner) clonePhase(ctx context.Context, ready, lod, file *Row) {
	if !r.phase(ctx, "allinone", ready, func(st *testenv.Stack) {
		r.withTenant(st, "clone", func(t Tenant) { r.cloneJobs(ctx, st, "allinone", t, lod, file) }, lod, file)
	}) {
		lod.Err, file.Err = ready.Err, ready.Err
	}
}

// scratch is the bare copies' prefix: in the customer's key space, outside any scene.
func (c *cloneBench) scratch() string {
	return "i/" + c.t.IntegrationID + "/u/" + c.uid + "/bench-raw/"
}

// lodCloneFolder is a LOD folder of n files: a real fixture folder (its manifest and SOG cells)
// topped up with copies of its first .webp cell, so the commit's sniffs pass.
func lodCloneFolder(n int) (map[string][]byte, []string) {
	folder := fixtures.LODFolder(100)
	var cell []byte
	for _, p := range sortedKeys(folder) {
		if strings.HasSuffix(p, ".webp") {
			cell = folder[p]
			break
		}
	}
	for i := 0; len(folder) < n; i++ {
		folder[fmt.Sprintf("extra/%05d.webp", i)] = cell
	}
	return folder, sortedKeys(folder)
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func lodFileType(p string) string {
	if strings.HasSuffix(p, ".json") {
		return "application/json"
	}
	return "image/webp"
}

// putSigned PUTs body to a signed upload URL with the signed headers.
func putSigned(ctx context.Context, uploadURL, contentType string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, uploadURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Cache-Control", scene.CacheControl)
	resp, err := benchClient.Do(req)
	if err != nil {
		return fmt.Errorf("signed upload: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("signed upload: status %d", resp.StatusCode)
	}
	return nil
}

// lodSource uploads and commits the LOD folder and returns the scene id, its folder (a prefix)
// and the folder's keys.
func (c *cloneBench) lodSource(ctx context.Context) (id, prefix string, keys []string, err error) {
	folder, paths := lodCloneFolder(cloneLODObjects)
	files := make([]map[string]any, len(paths))
	for i, p := range paths {
		files[i] = map[string]any{"relativePath": p, "contentType": lodFileType(p), "fileSize": len(folder[p])}
	}
	up, err := call(c.gw, http.MethodPost, "/api/v1/uploads/lod-folder", c.h, map[string]any{"files": files}, http.StatusOK)
	if err != nil {
		return "", "", nil, err
	}
	folderKey, _ := up["folderKey"].(string)
	manifestURL, _ := up["manifestUrl"].(string)
	uploads, _ := up["uploads"].([]any)
	if folderKey == "" || manifestURL == "" || len(uploads) != len(paths) {
		return "", "", nil, fmt.Errorf("lod-folder: %d signed uploads for %d files, folderKey %q", len(uploads), len(paths), folderKey)
	}
	urls := make([]string, len(uploads))
	for i, u := range uploads {
		m, _ := u.(map[string]any)
		p, _ := m["relativePath"].(string)
		urls[i], _ = m["uploadUrl"].(string)
		if _, ok := folder[p]; !ok || urls[i] == "" {
			return "", "", nil, fmt.Errorf("lod-folder: bad upload %v", m)
		}
	}
	if err := forEach(len(uploads), uploadWorkers, func(i int) error {
		p := uploads[i].(map[string]any)["relativePath"].(string)
		return putSigned(ctx, urls[i], lodFileType(p), folder[p])
	}); err != nil {
		return "", "", nil, fmt.Errorf("lod uploads: %w", err)
	}
	body, err := call(c.gw, http.MethodPost, "/api/v1/splats", c.h, map[string]any{"title": "Bench LOD clone source",
		"splatType": "lod", "splatUrl": manifestURL, "lodFolderKey": folderKey}, http.StatusCreated)
	if err != nil {
		return "", "", nil, err
	}
	if id, _ = body["splatId"].(string); id == "" {
		return "", "", nil, errors.New("lod commit: no splatId")
	}
	keys, err = c.list(ctx, folderKey+"/")
	if err != nil {
		return "", "", nil, err
	}
	if len(keys) != cloneLODObjects {
		return "", "", nil, fmt.Errorf("the source folder holds %d objects, want %d", len(keys), cloneLODObjects)
	}
	return id, folderKey + "/", keys, nil
}

// list returns every key under prefix.
func (c *cloneBench) list(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(c.store.Client, &s3.ListObjectsV2Input{Bucket: aws.String(c.store.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// copyRaw is one plain CopyObject inside the bucket, as the clone job does it.
func (c *cloneBench) copyRaw(ctx context.Context, src, dst string) error {
	_, err := c.store.Client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(c.store.Bucket), Key: aws.String(dst),
		CopySource: aws.String(objectkeys.CopySource(c.store.Bucket, src)), MetadataDirective: s3types.MetadataDirectiveCopy})
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}

// cloneRun is one clone job as the client saw it.
type cloneRun struct {
	took    time.Duration
	status  int // of the POST
	polls   int
	total   int // totalObjects, as last reported while running
	splatID string
}

// clone POSTs a clone of srcID (asking for 202 when async) and polls a 202 every clonePoll until
// the job succeeds; took runs from the POST to the success answer.
func (c *cloneBench) clone(ctx context.Context, srcID string, async bool) (cloneRun, error) {
	h := map[string]string{}
	for k, v := range c.h {
		h[k] = v
	}
	if async {
		h["Prefer"] = "respond-async"
	}
	path := "/api/v1/splats/" + srcID + "/clone"
	var run cloneRun
	t0 := time.Now()
	status, body, err := c.send(ctx, http.MethodPost, path, h)
	if err != nil {
		return run, err
	}
	run.status = status
	switch status {
	case http.StatusCreated:
		run.took = time.Since(t0)
		return run, c.success(&run, body)
	case http.StatusAccepted:
	default:
		return run, fmt.Errorf("POST %s: status %d: %s", path, status, brief(body))
	}
	jobID, _ := body["jobId"].(string)
	if jobID == "" {
		return run, fmt.Errorf("POST %s: 202 without jobId", path)
	}
	if n, ok := body["totalObjects"].(float64); ok {
		run.total = int(n)
	}
	for time.Since(t0) < cloneDeadline {
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-time.After(clonePoll):
		}
		status, body, err := c.send(ctx, http.MethodGet, path+"/"+jobID, h)
		if err != nil {
			return run, err
		}
		run.polls++
		if status != http.StatusOK {
			return run, fmt.Errorf("poll %s: status %d: %s", jobID, status, brief(body))
		}
		switch body["status"] {
		case "success":
			run.took = time.Since(t0)
			return run, c.success(&run, body)
		case "running":
			if n, ok := body["totalObjects"].(float64); ok && n > 0 {
				run.total = int(n)
			}
		default:
			return run, fmt.Errorf("poll %s: %s", jobID, brief(body))
		}
	}
	return run, fmt.Errorf("clone job %s not done after %s", jobID, cloneDeadline)
}

func (c *cloneBench) success(run *cloneRun, body map[string]any) error {
	if body["status"] != "success" {
		return fmt.Errorf("clone: %s", brief(body))
	}
	if run.splatID, _ = body["splatId"].(string); run.splatID == "" {
		return errors.New("clone: success without splatId")
	}
	return nil
}

// send is one gateway request without a body, answering its status and JSON object.
func (c *cloneBench) send(ctx context.Context, method, path string, h map[string]string) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.gw+path, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := benchClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		return 0, nil, fmt.Errorf("%s %s: status %d, not JSON: %.200s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, body, nil
}

func brief(body map[string]any) string {
	b, _ := json.Marshal(body)
	if len(b) > 300 {
		b = b[:300]
	}
	return string(b)
}

// detail reads a scene through the gateway.
func (c *cloneBench) detail(id string) (map[string]any, error) {
	body, err := call(c.gw, http.MethodGet, "/api/v1/splats/"+id, c.h, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	sp, _ := body["splat"].(map[string]any)
	if sp == nil {
		return nil, fmt.Errorf("GET scene %s: no splat", id)
	}
	return sp, nil
}

// lodClone measures the LOD folder's clone rate against the bare copy rate, one untimed warm-up
// pair then cloneLODRuns alternated pairs; each clone must hold the whole folder.
func (c *cloneBench) lodClone(ctx context.Context, row *Row) error {
	log := c.r.o.Log
	log.Info("uploading the LOD clone source", "files", cloneLODObjects, "workers", uploadWorkers)
	setup := time.Now()
	srcID, srcPrefix, keys, err := c.lodSource(ctx)
	if err != nil {
		return fmt.Errorf("clone source setup: %w", err)
	}
	setupTook := time.Since(setup)
	log.Info("LOD clone source committed", "took", setupTook.Round(time.Millisecond))

	var prod, bare []float64
	var totals []int
	polls := 0
	for i := -1; i < cloneLODRuns; i++ { // run -1 warms both up
		job := func() error {
			run, err := c.clone(ctx, srcID, true)
			if err != nil {
				return err
			}
			if run.status != http.StatusAccepted {
				return fmt.Errorf("clone with Prefer: respond-async answered %d, want 202", run.status)
			}
			sp, err := c.detail(run.splatID)
			if err != nil {
				return err
			}
			folder, _ := sp["lodFolderKey"].(string)
			if folder == "" {
				return fmt.Errorf("clone %s has no lodFolderKey", run.splatID)
			}
			got, err := c.list(ctx, folder+"/")
			if err != nil {
				return err
			}
			if len(got) != cloneLODObjects {
				return fmt.Errorf("clone %s: its folder holds %d objects, want %d", run.splatID, len(got), cloneLODObjects)
			}
			if i >= 0 {
				prod = append(prod, float64(cloneLODObjects)/run.took.Seconds())
				totals, polls = append(totals, run.total), polls+run.polls
			}
			log.Info("LOD clone done", "run", i, "took", run.took.Round(time.Millisecond), "polls", run.polls, "totalObjects", run.total)
			return nil
		}
		raw := func() error {
			dst := fmt.Sprintf("%slod-%d/", c.scratch(), i+1)
			t0 := time.Now()
			err := forEach(len(keys), c.conc, func(j int) error {
				return c.copyRaw(ctx, keys[j], dst+strings.TrimPrefix(keys[j], srcPrefix))
			})
			took := time.Since(t0)
			if err != nil {
				return fmt.Errorf("bare copy: %w", err)
			}
			if i >= 0 {
				bare = append(bare, float64(len(keys))/took.Seconds())
			}
			log.Info("bare LOD copy done", "run", i, "took", took.Round(time.Millisecond))
			return nil
		}
		first, second := job, raw
		if i%2 != 0 { // alternate which goes first
			first, second = raw, job
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	for _, n := range totals {
		if n != 0 && n != cloneLODObjects {
			return fmt.Errorf("the clone job reported totalObjects %d, want %d", n, cloneLODObjects)
		}
	}
	row.Value, row.Bare = medianF(prod), medianF(bare)
	// Each round's own ratio too: its two sides ran back to back, so the machine's load drifts
	// less between them than across rounds.
	ratios := make([]float64, len(prod))
	for i := range prod {
		ratios[i] = prod[i] / bare[i]
	}
	row.Notes = fmt.Sprintf("%d objects, concurrency %d; median of %d after a warm-up; clone %.0f-%.0f obj/s (%d polls), bare CopyObject pool %.0f-%.0f obj/s; ratio per round %.2f-%.2f, median %.2f; each clone's folder listed: %d objects; setup %.1f s",
		cloneLODObjects, c.conc, cloneLODRuns, slices.Min(prod), slices.Max(prod), polls, slices.Min(bare), slices.Max(bare),
		slices.Min(ratios), slices.Max(ratios), medianF(ratios), cloneLODObjects, setupTook.Seconds())
	return nil
}

// cloneFileBody is a valid .splat of cloneFileBytes: fixture records repeated.
func cloneFileBody() []byte {
	unit := fixtures.Splat(62_500) // 2 000 000 bytes
	return bytes.Repeat(unit, cloneFileBytes/len(unit))
}

// fileClone measures one 200 MB file's clone time against one raw CopyObject of it, the median
// of cloneFileRuns alternated runs each.
func (c *cloneBench) fileClone(ctx context.Context, row *Row) error {
	log := c.r.o.Log
	log.Info("uploading the single-file clone source", "bytes", cloneFileBytes)
	setup := time.Now()
	fileURL, err := c.t.UploadSplat(c.gw, c.eu, cloneFileBody())
	if err != nil {
		return fmt.Errorf("clone source upload: %w", err)
	}
	srcKey, ok := strings.CutPrefix(fileURL, c.cfgAB+"/")
	if !ok {
		return fmt.Errorf("file URL %s is not under the asset base %s", fileURL, c.cfgAB)
	}
	body, err := call(c.gw, http.MethodPost, "/api/v1/splats", c.h,
		map[string]any{"title": "Bench file clone source", "splatUrl": fileURL}, http.StatusCreated)
	if err != nil {
		return fmt.Errorf("clone source commit: %w", err)
	}
	srcID, _ := body["splatId"].(string)
	if srcID == "" {
		return errors.New("clone source commit: no splatId")
	}
	setupTook := time.Since(setup)

	var prod, bare []time.Duration
	statuses := map[int]int{}
	for i := range cloneFileRuns {
		job := func() error {
			run, err := c.clone(ctx, srcID, false)
			if err != nil {
				return err
			}
			if err := c.checkFileClone(ctx, run.splatID); err != nil {
				return err
			}
			prod = append(prod, run.took)
			statuses[run.status]++
			log.Info("file clone done", "run", i, "status", run.status, "took", run.took.Round(time.Millisecond))
			return nil
		}
		raw := func() error {
			t0 := time.Now()
			if err := c.copyRaw(ctx, srcKey, fmt.Sprintf("%sfile-%d.splat", c.scratch(), i)); err != nil {
				return fmt.Errorf("bare copy: %w", err)
			}
			took := time.Since(t0)
			bare = append(bare, took)
			log.Info("bare file copy done", "run", i, "took", took.Round(time.Millisecond))
			return nil
		}
		first, second := job, raw
		if i%2 != 0 {
			first, second = raw, job
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	row.Value, row.Bare = ms(median(prod)), ms(median(bare))
	row.Notes = fmt.Sprintf("%d B .splat; median of %d alternated; POST %s; clone %.0f-%.0f ms, bare CopyObject %.0f-%.0f ms; setup %.1f s",
		cloneFileBytes, cloneFileRuns, fmtCounts(statuses), ms(slices.Min(prod)), ms(slices.Max(prod)),
		ms(slices.Min(bare)), ms(slices.Max(bare)), setupTook.Seconds())
	return nil
}

// checkFileClone checks a file clone's own object holds the whole file.
func (c *cloneBench) checkFileClone(ctx context.Context, id string) error {
	sp, err := c.detail(id)
	if err != nil {
		return err
	}
	u, _ := sp["splatUrl"].(string)
	// The answer may name the file through the gateway's asset route (signed for a private
	// scene).
	key, _, ok := objectkeys.AssetRef(c.cfgAB, c.gw, u)
	if !ok {
		return fmt.Errorf("clone %s: splatUrl %q names no stored object", id, u)
	}
	head, err := c.store.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(c.store.Bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("clone %s: HEAD %s: %w", id, key, err)
	}
	if n := aws.ToInt64(head.ContentLength); n != cloneFileBytes {
		return fmt.Errorf("clone %s: its file holds %d bytes, want %d", id, n, cloneFileBytes)
	}
	return nil
}

// cleanup deletes the bare copies, best effort: the data directory goes with the run anyway.
func (c *cloneBench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys, err := c.list(ctx, c.scratch())
	for len(keys) > 0 && err == nil {
		batch := keys[:min(1000, len(keys))]
		keys = keys[len(batch):]
		ids := make([]s3types.ObjectIdentifier, len(batch))
		for i, k := range batch {
			ids[i] = s3types.ObjectIdentifier{Key: aws.String(k)}
		}
		var out *s3.DeleteObjectsOutput
		out, err = c.store.Client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(c.store.Bucket),
			Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err == nil && len(out.Errors) > 0 {
			err = fmt.Errorf("%d keys not deleted, first %s: %s", len(out.Errors), aws.ToString(out.Errors[0].Key), aws.ToString(out.Errors[0].Code))
		}
	}
	if err != nil {
		c.r.o.Log.Warn("bare clone copies not deleted", "prefix", c.scratch(), "err", err)
	}
}

func medianF(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
