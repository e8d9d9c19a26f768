package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/testenv"
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
	c, err := r.storeCustomer(st, t, "bench-cloner-"+mode)
	if err != nil {
		lod.Err, file.Err = fmt.Errorf("clone setup: %w", err), fmt.Errorf("clone setup: %w", err)
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

// storeCustomer provisions customer eu of t with room for large uploads and no scene cap, and
// returns it with the stack's store, for measures that upload, commit and copy.
func (r *runner) storeCustomer(st *testenv.Stack, t Tenant, eu string) (*cloneBench, error) {
	cfg := st.State.Config()
	store, err := objectstore.New(cfg)
	if err != nil {
		return nil, err
	}
	c := &cloneBench{r: r, gw: st.State.GatewayURL, cfgAB: cfg.AssetBase(), store: store, conc: cfg.CloneConcurrency,
		t: t, eu: eu}
	if c.conc <= 0 {
		c.conc = defaultCloneConcurrency
	}
	c.h = t.HeadersFor(c.eu)
	// Room for the 200 MB source and its clones, no scene cap.
	body, err := call(c.gw, http.MethodPut, "/api/v1/external-user", c.h,
		map[string]any{"limitBytes": int64(4) << 30, "maxSplats": nil}, http.StatusOK)
	if err != nil {
		return nil, err
	}
	u, _ := body["externalUser"].(map[string]any)
	if c.uid, _ = u["id"].(string); c.uid == "" {
		return nil, errors.New("the customer has no id")
	}
	return c, nil
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
	return string(clip(b))
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

// cleanup deletes the bare copies, best effort: the data directory goes with the run anyway.
func (c *cloneBench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := objectstore.Bucket{API: c.store.Client, Name: c.store.Bucket}
	if err := b.EmptyPrefix(ctx, c.scratch(), nil); err != nil {
		c.r.o.Log.Warn("bare clone copies not deleted", "prefix", c.scratch(), "err", err)
	}
}
