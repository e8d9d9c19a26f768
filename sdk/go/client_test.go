package splathost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// fastRetry keeps the tests quick while still exercising every wait.
var fastRetry = RetryPolicy{MaxAttempts: 4, InitialBackoff: 4 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Multiplier: 2}

// newTestClient is a client of srv whose jitter records the ceilings it was asked for.
func newTestClient(t *testing.T, srv *httptest.Server, ceilings *[]time.Duration) *Client {
	t.Helper()
	c, err := New(srv.URL, WithKeys("mpk_pub", "msk_sec"), WithAdminToken("adm"), WithRetry(fastRetry))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	c.jitter = func(d time.Duration) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if ceilings != nil {
			*ceilings = append(*ceilings, d)
		}
		return d / 2
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func TestRetriesIdempotentRequestsWithGrowingBackoff(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 4 {
			writeJSON(w, 503, `{"status":"error","message":"busy"}`)
			return
		}
		if r.Header.Get("Authorization") != "Bearer msk_sec" || r.Header.Get(headerPublicKey) != "mpk_pub" ||
			r.Header.Get(headerExternalUser) != "eu-1" {
			t.Errorf("headers: %v", r.Header)
		}
		writeJSON(w, 200, `{"status":"success","externalUser":{"id":"abc","externalUserId":"eu-1","limitBytes":10}}`)
	}))
	defer srv.Close()
	var ceilings []time.Duration
	u, err := newTestClient(t, srv, &ceilings).GetCustomer(context.Background(), "eu-1")
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != "abc" || u.LimitBytes != 10 || calls.Load() != 4 {
		t.Fatalf("got %+v after %d calls", u, calls.Load())
	}
	want := []time.Duration{4 * time.Millisecond, 8 * time.Millisecond, 16 * time.Millisecond}
	if len(ceilings) != len(want) {
		t.Fatalf("ceilings %v", ceilings)
	}
	for i := range want {
		if ceilings[i] != want[i] {
			t.Fatalf("ceilings %v, want %v", ceilings, want)
		}
	}
}

func TestGivesUpAfterMaxAttemptsWithTheLastError(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(w, 500, `{"status":"error","message":"boom"}`)
	}))
	defer srv.Close()
	_, err := newTestClient(t, srv, nil).GetSplat(context.Background(), "", "0123456789abcdef01234567")
	var e *APIError
	if !errors.As(err, &e) || e.Status != 500 || e.Message != "boom" {
		t.Fatalf("err %v", err)
	}
	if calls.Load() != 4 {
		t.Fatalf("%d calls", calls.Load())
	}
}

func TestUnsafePostsAreNotRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(w, 502, `not json`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv, nil)
	ctx := context.Background()
	_, err := c.RotateIntegration(ctx, "x")
	var e *APIError
	if !errors.As(err, &e) || e.Status != 502 || e.Message != "Bad Gateway" {
		t.Fatalf("err %v", err)
	}
	_, _ = c.CreateAccount(ctx, NewAccount{Name: "a", Plan: PlanPro})
	if calls.Load() != 2 {
		t.Fatalf("%d calls for two unsafe posts", calls.Load())
	}
	calls.Store(0)
	_ = c.RevokeIntegration(ctx, "x")
	if calls.Load() != 4 {
		t.Fatalf("revoke is safe to repeat: %d calls", calls.Load())
	}
}

// TestKeyedCallsRetryUnderOneIdempotencyKey: commit, clone, the upload requests and PUT/DELETE
// of a customer send one Idempotency-Key on every attempt (the context's, else a random one per
// call), are retried after a 5xx and wait out a 409 IDEMPOTENCY_KEY_IN_USE; a 409 of another
// code and a 422 IDEMPOTENCY_KEY_REUSED are answers, not retried.
func TestKeyedCallsRetryUnderOneIdempotencyKey(t *testing.T) {
	var mu sync.Mutex
	keys := map[string][]string{} // route -> key of each attempt
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.Method + " " + r.URL.Path
		mu.Lock()
		keys[route] = append(keys[route], r.Header.Get(headerIdempotencyKey))
		n := len(keys[route])
		mu.Unlock()
		switch {
		case r.URL.Path == "/api/v1/splats/reused/clone":
			writeJSON(w, 422, `{"status":"error","code":"IDEMPOTENCY_KEY_REUSED","message":"reused"}`)
		case r.URL.Path == "/api/v1/splats/missing/clone":
			writeJSON(w, 409, `{"status":"error","code":"SOURCE_FILES_MISSING","message":"gone"}`)
		case n == 1:
			writeJSON(w, 503, `{"status":"error","message":"busy"}`)
		case n == 2:
			writeJSON(w, 409, `{"status":"error","code":"IDEMPOTENCY_KEY_IN_USE","message":"running"}`)
		case r.URL.Path == "/api/v1/splats":
			writeJSON(w, 201, `{"status":"success","splat":{"id":"s1"}}`)
		case strings.HasSuffix(r.URL.Path, "/clone"):
			writeJSON(w, 201, `{"status":"success","splatId":"s2","sourceSplatId":"s1"}`)
		default:
			writeJSON(w, 200, `{"status":"success"}`)
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv, nil)
	ctx := context.Background()
	if _, err := c.CommitSplat(ctx, "eu", CommitRequest{Title: "t", SplatURL: "u"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.StartClone(WithIdempotencyKey(ctx, "my-key-1"), "eu", "s1", CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{
		func() error { _, err := c.RequestFileUpload(ctx, "eu", FileUploadRequest{}); return err },
		func() error { _, err := c.RequestFolderUpload(ctx, "eu", nil); return err },
		func() error { _, err := c.RequestImageUploads(ctx, "eu", ImageUploadRequest{}); return err },
		func() error { _, err := c.PutCustomer(ctx, "eu", CustomerUpdate{}); return err },
		func() error { _, err := c.DeleteCustomer(ctx, "eu"); return err },
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := c.StartClone(ctx, "eu", "reused", CloneOptions{})
	var e *APIError
	if !errors.As(err, &e) || e.Status != 422 || e.Code != CodeIdempotencyKeyReused {
		t.Fatalf("err %v", err)
	}
	if _, _, err := c.StartClone(ctx, "eu", "missing", CloneOptions{}); !errors.As(err, &e) || e.Code != CodeSourceFilesMissing {
		t.Fatalf("err %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for route, ks := range keys {
		want := 3
		if strings.Contains(route, "reused") || strings.Contains(route, "missing") {
			want = 1
		}
		if len(ks) != want {
			t.Errorf("%s: %d attempts, want %d", route, len(ks), want)
		}
		for _, k := range ks {
			if k != ks[0] || k == "" {
				t.Errorf("%s: keys %q: one key of every attempt", route, ks)
			}
		}
		if seen[ks[0]] {
			t.Errorf("%s: key %q shared with another call", route, ks[0])
		}
		seen[ks[0]] = true
	}
	if got := keys["POST /api/v1/splats/s1/clone"]; len(got) == 0 || got[0] != "my-key-1" {
		t.Errorf("the context's key is sent: %q", got)
	}
	if len(keys) != 9 {
		t.Errorf("routes %v", keys)
	}
}

func TestRetriesNetworkErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			// Drop the connection without an answer.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		writeJSON(w, 200, `{"status":"success","usage":{"storage":{"usedBytes":1,"limitBytes":4,"remainingBytes":3,"percentUsed":25},"splats":{"used":2,"limit":null}}}`)
	}))
	defer srv.Close()
	u, err := newTestClient(t, srv, nil).CustomerUsage(context.Background(), "eu")
	if err != nil {
		t.Fatal(err)
	}
	if u.Storage.PercentUsed != 25 || u.Splats.Used != 2 || u.Splats.Limit != nil || calls.Load() != 2 {
		t.Fatalf("%+v after %d calls", u, calls.Load())
	}
}

func TestCancelStopsTheRetryLoop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 503, `{"status":"error","message":"busy"}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv, nil)
	c.retry = RetryPolicy{MaxAttempts: 100, InitialBackoff: time.Hour, MaxBackoff: time.Hour, Multiplier: 2}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.GetCustomer(ctx, "eu")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestRetryAfterIsHonouredUpToMaxBackoff(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "3600")
			writeJSON(w, 503, `{"status":"error","message":"busy"}`)
			return
		}
		writeJSON(w, 200, `{"status":"success"}`)
	}))
	defer srv.Close()
	start := time.Now()
	if err := newTestClient(t, srv, nil).DeleteSplat(context.Background(), "eu", "x"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < fastRetry.MaxBackoff || d > 5*time.Second {
		t.Fatalf("waited %v", d)
	}
}

func TestFullJitterStaysWithinTheCeiling(t *testing.T) {
	for range 1000 {
		if d := fullJitter(10 * time.Millisecond); d < 0 || d > 10*time.Millisecond {
			t.Fatal(d)
		}
	}
	if fullJitter(0) != 0 {
		t.Fatal("zero ceiling")
	}
}

func TestErrorEnvelopesDecodeToTypedDetails(t *testing.T) {
	cases := map[string]struct {
		status int
		body   string
		check  func(*APIError) bool
	}{
		"validation": {400, `{"status":"error","message":"validation failed","issues":["title: too long","x: y"]}`,
			func(e *APIError) bool { return len(e.Issues) == 2 && e.Issues[0] == "title: too long" }},
		"storage": {413, `{"status":"error","code":"STORAGE_QUOTA_EXCEEDED","message":"full","scope":"customer","usedBytes":10,"limitBytes":12,"remainingBytes":2,"requestedBytes":5}`,
			func(e *APIError) bool {
				return e.Storage != nil && *e.Storage == StorageQuotaDetails{Scope: "customer", UsedBytes: 10, LimitBytes: 12, RemainingBytes: 2, RequestedBytes: 5}
			}},
		"plan limit": {403, `{"status":"error","code":"plan_limit","dimension":"splatCount","limit":3,"current":3,"upgradeUrl":"/billing","scope":"account","message":"cap"}`,
			func(e *APIError) bool {
				p := e.PlanLimit
				return p != nil && p.Dimension == "splatCount" && *p.Limit == 3 && *p.Current == 3 && p.UpgradeURL == "/billing" && p.Scope == "account"
			}},
		"cloning": {403, `{"status":"error","code":"plan_limit","dimension":"cloning","limit":null,"message":"no"}`,
			func(e *APIError) bool {
				return e.PlanLimit != nil && e.PlanLimit.Limit == nil && e.PlanLimit.Dimension == "cloning"
			}},
		"clone in progress": {429, `{"status":"error","code":"CLONE_IN_PROGRESS","message":"busy","jobId":"j1","sourceSplatId":"s1"}`,
			func(e *APIError) bool {
				return e.CloneInProgress != nil && *e.CloneInProgress == CloneInProgressDetails{JobID: "j1", SourceSplatID: "s1"}
			}},
		"not found": {404, `{"status":"error","message":"splat not found"}`,
			func(e *APIError) bool {
				return e.Storage == nil && e.PlanLimit == nil && e.CloneInProgress == nil && e.Code == ""
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Request-Id", "req-1")
				writeJSON(w, tc.status, tc.body)
			}))
			defer srv.Close()
			_, err := newTestClient(t, srv, nil).PatchSplat(context.Background(), "eu", "x", SplatPatch{Title: Ptr("t")})
			var e *APIError
			if !errors.As(err, &e) {
				t.Fatalf("err %T %v", err, err)
			}
			if e.Status != tc.status || e.Message == "" || e.RequestID != "req-1" || !tc.check(e) {
				t.Fatalf("%+v", e)
			}
			if !strings.Contains(e.Error(), e.Message) {
				t.Fatal(e.Error())
			}
		})
	}
}

// The code, not the status, tells a customer never provisioned from a wrong key: both are 401
// on the upload requests, and only the key's is IsUnauthorized.
func TestErrorCodesHaveTypedChecks(t *testing.T) {
	cases := []struct {
		status                                 int
		body                                   string
		code                                   string
		unauthorized, notFound, notProvisioned bool
		revoked                                bool
	}{
		{401, `{"status":"error","code":"UNAUTHORIZED","message":"invalid credentials"}`, CodeUnauthorized, true, false, false, false},
		{401, `{"status":"error","message":"no code: an older service or a proxy"}`, "", true, false, false, false},
		{401, `{"status":"error","code":"CUSTOMER_NOT_PROVISIONED","message":"external user not found"}`, CodeCustomerNotProvisioned, false, false, true, false},
		{401, `{"status":"error","code":"CUSTOMER_INACTIVE","message":"external user is inactive"}`, CodeCustomerInactive, false, false, false, false},
		{404, `{"status":"error","code":"CUSTOMER_NOT_PROVISIONED","message":"external user not found"}`, CodeCustomerNotProvisioned, false, true, true, false},
		{404, `{"status":"error","code":"NOT_FOUND","message":"scene not found"}`, CodeNotFound, false, true, false, false},
		{410, `{"status":"error","code":"INTEGRATION_REVOKED","message":"integration revoked"}`, CodeIntegrationRevoked, false, false, false, true},
	}
	for _, tc := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, tc.status, tc.body) }))
		_, err := newTestClient(t, srv, nil).PatchSplat(context.Background(), "eu", "x", SplatPatch{Title: Ptr("t")})
		srv.Close()
		if CodeOf(err) != tc.code || !IsCode(err, tc.code) || IsUnauthorized(err) != tc.unauthorized || IsNotFound(err) != tc.notFound ||
			IsCustomerNotProvisioned(err) != tc.notProvisioned || IsRevoked(err) != tc.revoked {
			t.Fatalf("%d %s: code %q unauthorized %v notFound %v notProvisioned %v revoked %v", tc.status, tc.body, CodeOf(err),
				IsUnauthorized(err), IsNotFound(err), IsCustomerNotProvisioned(err), IsRevoked(err))
		}
	}
	if CodeOf(errors.New("network")) != "" || IsCode(nil, "") {
		t.Fatal("an error that is no answer has no code")
	}
}

func TestNullableFieldsHaveThreeStates(t *testing.T) {
	b, _ := json.Marshal(CustomerUpdate{})
	if string(b) != `{}` {
		t.Fatal(string(b))
	}
	b, _ = json.Marshal(CustomerUpdate{MaxSplats: Null[int64](), LimitBytes: Ptr[int64](5), DisplayName: Value("Ann")})
	if string(b) != `{"limitBytes":5,"maxSplats":null,"displayName":"Ann"}` {
		t.Fatal(string(b))
	}
	b, _ = json.Marshal(AccountUpdate{MaxSplats: Value[int64](0)})
	if string(b) != `{"maxSplats":0}` {
		t.Fatal(string(b))
	}
}

// fakeStore is a signed-URL store that checks the signed headers and can fail the first PUT
// of each object with a 500 or a dropped connection, to exercise retries and progress undo.
type fakeStore struct {
	mu       sync.Mutex
	objects  map[string][]byte
	attempts map[string]int
	failures int
	inFlight atomic.Int32
	maxSeen  atomic.Int32
}

func (s *fakeStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxSeen.Load()
		if n <= m || s.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond)
	if r.Header.Get("Cache-Control") != CacheControl || r.Header.Get("Content-Type") == "" {
		w.WriteHeader(403)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if int64(len(body)) != r.ContentLength {
		w.WriteHeader(400)
		return
	}
	s.mu.Lock()
	s.attempts[r.URL.Path]++
	first := s.attempts[r.URL.Path] == 1
	s.mu.Unlock()
	if first && s.failures > 0 {
		w.WriteHeader(500)
		return
	}
	s.mu.Lock()
	s.objects[r.URL.Path] = body
	s.mu.Unlock()
}

func TestUploadFSPutsEveryFileWithBoundedConcurrencyAndCommits(t *testing.T) {
	st := &fakeStore{objects: map[string][]byte{}, attempts: map[string]int{}, failures: 1}
	store := httptest.NewServer(st)
	defer store.Close()
	folder := fstest.MapFS{"lod-meta.json": {Data: []byte(`{"x":1}`)}, ".DS_Store": {Data: []byte("junk")}}
	for i := range 40 {
		folder[fmt.Sprintf("cells/%d/%03d.webp", i%4, i)] = &fstest.MapFile{Data: []byte(strings.Repeat("w", 100+i))}
	}
	var committed CommitRequest
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/uploads/lod-folder":
			var req struct{ Files []FolderFile }
			_ = json.NewDecoder(r.Body).Decode(&req)
			up := FolderUpload{FolderKey: "fk", ManifestURL: "https://cdn/fk/lod-meta.json", ExpiresAt: time.Now()}
			for _, f := range req.Files {
				up.Uploads = append(up.Uploads, SignedFile{RelativePath: f.RelativePath, UploadURL: store.URL + "/" + f.RelativePath})
			}
			b, _ := json.Marshal(up)
			writeJSON(w, 200, string(b))
		case "/api/v1/splats":
			_ = json.NewDecoder(r.Body).Decode(&committed)
			writeJSON(w, 201, `{"status":"success","splatId":"s1","splat":{"id":"s1","splatType":"lod"},"usage":{"usedBytes":1}}`)
		default:
			w.WriteHeader(404)
		}
	}))
	defer api.Close()
	c := newTestClient(t, api, nil)
	var last Progress
	var calls int
	res, err := c.UploadFS(context.Background(), "eu", folder, UploadOptions{Title: "Park", Concurrency: 3, OnProgress: func(p Progress) {
		calls++
		if p.BytesDone < 0 || p.BytesDone > p.BytesTotal || p.FilesDone > p.FilesTotal {
			t.Errorf("progress out of range: %+v", p)
		}
		last = p
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.SplatID != "s1" || committed.SplatType != SplatTypeLOD || committed.LodFolderKey != "fk" || committed.SplatURL != "https://cdn/fk/lod-meta.json" || committed.Title != "Park" {
		t.Fatalf("%+v %+v", res, committed)
	}
	if len(st.objects) != 41 || st.objects["/lod-meta.json"] == nil {
		t.Fatalf("%d objects stored", len(st.objects))
	}
	if st.maxSeen.Load() > 3 {
		t.Fatalf("%d PUTs in flight, bound 3", st.maxSeen.Load())
	}
	if last.FilesDone != 41 || last.FilesTotal != 41 || last.BytesDone != last.BytesTotal || calls < 41 {
		t.Fatalf("last progress %+v after %d calls", last, calls)
	}
}

func TestUploadFileStopsAtTheFirstRefusedPut(t *testing.T) {
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }))
	defer store.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/uploads/splat-file" {
			t.Errorf("unexpected %s", r.URL.Path)
		}
		writeJSON(w, 200, `{"status":"success","uploadUrl":"`+store.URL+`/x","fileUrl":"f","expiresAt":"2026-01-01T00:00:00Z"}`)
	}))
	defer api.Close()
	dir := t.TempDir()
	p := dir + "/scene.splat"
	if err := os.WriteFile(p, make([]byte, 64), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := newTestClient(t, api, nil).UploadFile(context.Background(), "eu", p, UploadOptions{})
	var e *APIError
	if !errors.As(err, &e) || e.Status != 403 {
		t.Fatalf("err %v", err)
	}
}

func TestCloneAndWaitPollsAJobAndReportsA429(t *testing.T) {
	var polls atomic.Int32
	var busy atomic.Bool
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && busy.Load():
			writeJSON(w, 429, `{"status":"error","code":"CLONE_IN_PROGRESS","message":"busy","jobId":"job1","sourceSplatId":"src"}`)
		case r.Method == "POST":
			if r.Header.Get("Prefer") != "respond-async" {
				t.Errorf("Prefer %q", r.Header.Get("Prefer"))
			}
			writeJSON(w, 202, `{"status":"accepted","jobId":"job1","sourceSplatId":"src","copiedObjects":0,"totalObjects":3}`)
		case r.URL.Path == "/api/v1/splats/src/clone/job1":
			if n := polls.Add(1); n < 3 {
				writeJSON(w, 200, `{"status":"running","jobId":"job1","copiedObjects":`+string(rune('0'+n))+`,"totalObjects":3}`)
				return
			}
			writeJSON(w, 200, `{"status":"success","splatId":"new","sourceSplatId":"src","splat":{"id":"new"},"usage":{"usedBytes":9}}`)
		}
	}))
	defer api.Close()
	c := newTestClient(t, api, nil)
	var seen []int
	res, err := c.CloneAndWait(context.Background(), "eu", "src", CloneOptions{RespondAsync: true, PollInterval: time.Millisecond,
		OnProgress: func(j CloneJob) { seen = append(seen, j.CopiedObjects) }})
	if err != nil || res.SplatID != "new" || res.Splat.ID != "new" || res.Usage.UsedBytes != 9 || len(seen) != 2 || seen[1] != 2 {
		t.Fatalf("%+v %v %v", res, err, seen)
	}
	busy.Store(true)
	_, err = c.CloneAndWait(context.Background(), "eu", "src", CloneOptions{})
	var e *APIError
	if !errors.As(err, &e) || e.CloneInProgress == nil || e.CloneInProgress.JobID != "job1" {
		t.Fatalf("err %v", err)
	}
	polls.Store(0)
	res, err = c.CloneAndWait(context.Background(), "eu", "src", CloneOptions{ResumeRunning: true, PollInterval: time.Millisecond})
	if err != nil || res.SplatID != "new" {
		t.Fatalf("resume: %+v %v", res, err)
	}
	_, err = c.CloneAndWait(context.Background(), "eu", "other", CloneOptions{ResumeRunning: true})
	if !errors.As(err, &e) || e.Status != 429 {
		t.Fatalf("another scene's job is not resumed: %v", err)
	}
}

func TestNewRejectsRelativeURLs(t *testing.T) {
	if _, err := New("localhost:8080"); err == nil {
		t.Fatal("accepted a URL without scheme")
	}
}

// A closed port is a network error: retried, then returned as it is, not as an APIError.
func TestClosedPortIsANetworkError(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	c, _ := New("http://"+addr, WithRetry(RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond}))
	_, err := c.GetCustomer(context.Background(), "eu")
	var e *APIError
	if err == nil || errors.As(err, &e) {
		t.Fatalf("err %v", err)
	}
}
