//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/gateway"
	"github.com/splathost/splathost/internal/allinone"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/restclient"
	"github.com/splathost/splathost/internal/routes"
	"github.com/splathost/splathost/internal/sessiontoken"
	"github.com/splathost/splathost/internal/testenv"
)

var idemSeq atomic.Int64

// idemKey is a fresh key for one logical request of test t.
func idemKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "."), time.Now().UnixNano(), idemSeq.Add(1))
}

// withKey is h plus an Idempotency-Key.
func withKey(h map[string]string, key string) map[string]string {
	out := map[string]string{idempotency.KeyHeader: key}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// requireReplay checks that r is the first answer again, marked as a replay.
func requireReplay(t *testing.T, first, r *testenv.Response) {
	t.Helper()
	require.Equal(t, first.Status, r.Status, string(r.Raw))
	require.Equal(t, string(first.Raw), string(r.Raw), "a replay is the first answer's body, byte for byte")
	require.Equal(t, "true", r.Header.Get(idempotency.ReplayedHeader))
	require.Equal(t, first.Header.Get("Content-Type"), r.Header.Get("Content-Type"))
}

// requireIdemError checks the protocol's refusal envelope.
func requireIdemError(t *testing.T, r *testenv.Response, status int, code string) {
	t.Helper()
	requireEnvelope(t, r, status)
	require.Equal(t, code, r.Body["code"], string(r.Raw))
	require.Empty(t, r.Header.Get(idempotency.ReplayedHeader))
}

// ticketCount counts the upload tickets issued to eu of tn.
func ticketCount(t *testing.T, tn tenant, eu string) int {
	t.Helper()
	var n int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM upload_tickets k
		JOIN external_users u ON u.id = k.owner_id WHERE u.integration_id = $1 AND u.external_user_id = $2`,
		tn.IntegrationID, eu).Scan(&n))
	return n
}

// TestIdempotencyReplaysUploadAndCommit: a retried upload request and a retried commit with the
// same key and body get the first answer and act once; another body is 422; the key is scoped
// to integration, EU, method and path; requests without a key are untouched.
func TestIdempotencyReplaysUploadAndCommit(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "idem-1", nil)
	data := splatBytes(64)
	upBody := fmt.Sprintf(`{"fileName":"scene.splat","contentType":"application/splat","fileSize":%d}`, len(data))

	key := idemKey(t)
	up := do(t, "POST", "/api/v1/uploads/splat-file", withKey(a.keys("idem-1"), key), upBody)
	require.Equal(t, 200, up.Status, string(up.Raw))
	require.Empty(t, up.Header.Get(idempotency.ReplayedHeader), "a first answer is no replay")
	again := do(t, "POST", "/api/v1/uploads/splat-file", withKey(a.keys("idem-1"), key), upBody)
	requireReplay(t, up, again)
	require.Equal(t, 1, ticketCount(t, a, "idem-1"), "the retry issued no second upload")

	// Another body under the same key: refused, nothing issued.
	other := strings.Replace(upBody, "scene.splat", "other.splat", 1)
	requireIdemError(t, do(t, "POST", "/api/v1/uploads/splat-file", withKey(a.keys("idem-1"), key), other), 422, idempotency.CodeReused)
	require.Equal(t, 1, ticketCount(t, a, "idem-1"))

	// The same key elsewhere is another key: another path, another EU, another integration.
	lod := do(t, "POST", "/api/v1/uploads/lod-folder", withKey(a.keys("idem-1"), key), map[string]any{"files": []map[string]any{
		{"relativePath": "lod-meta.json", "contentType": "application/json", "fileSize": 10},
		{"relativePath": "0_0/means_l.webp", "contentType": "image/webp", "fileSize": 10}}})
	require.Equal(t, 200, lod.Status, string(lod.Raw))
	require.Empty(t, lod.Header.Get(idempotency.ReplayedHeader))
	ensureCustomer(t, a, "idem-2", nil)
	r := do(t, "POST", "/api/v1/uploads/splat-file", withKey(a.keys("idem-2"), key), upBody)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Empty(t, r.Header.Get(idempotency.ReplayedHeader))
	require.NotEqual(t, up.Body["fileUrl"], r.Body["fileUrl"])
	b := newTenant(t)
	ensureCustomer(t, b, "idem-1", nil)
	r = do(t, "POST", "/api/v1/uploads/splat-file", withKey(b.keys("idem-1"), key), upBody)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Empty(t, r.Header.Get(idempotency.ReplayedHeader), "another integration never sees this one's answer")
	require.NotEqual(t, up.Body["fileUrl"], r.Body["fileUrl"])

	// Without a key every request acts.
	require.Equal(t, 200, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("idem-1"), upBody).Status)
	require.Equal(t, 200, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("idem-1"), upBody).Status)
	require.Equal(t, 4, ticketCount(t, a, "idem-1"), "the keyed upload, the LOD folder and two without a key")

	// The commit: one scene however often it is retried.
	require.Equal(t, 200, putUpload(t, up.Body["uploadUrl"].(string), data,
		map[string]string{"Content-Type": "application/splat", "Cache-Control": cacheControl}))
	commitBody := fmt.Sprintf(`{"title":"idempotent","splatUrl":%q}`, up.Body["fileUrl"])
	ck := idemKey(t)
	first := do(t, "POST", "/api/v1/splats", withKey(a.keys("idem-1"), ck), commitBody)
	require.Equal(t, 201, first.Status, string(first.Raw))
	for range 2 {
		requireReplay(t, first, do(t, "POST", "/api/v1/splats", withKey(a.keys("idem-1"), ck), commitBody))
	}
	ids, _ := listPage(t, a, "idem-1", "")
	require.Equal(t, []string{splatOf(first)["id"].(string)}, ids)
	used, scenes := usageOf(t, a, "idem-1")
	require.Equal(t, int64(1), scenes)
	require.Equal(t, int64(len(data)), used, "storage charged once")

	// A 4xx answer is kept too: the retry gets the same refusal, even once the cause is gone.
	bad := `{"title":"","splatUrl":"nope"}`
	bk := idemKey(t)
	refused := do(t, "POST", "/api/v1/splats", withKey(a.keys("idem-1"), bk), bad)
	requireEnvelope(t, refused, 400)
	requireReplay(t, refused, do(t, "POST", "/api/v1/splats", withKey(a.keys("idem-1"), bk), bad))
}

// TestIdempotencyCustomerAndClone: PUT and DELETE of a customer and a clone replay their first
// answer and act once.
func TestIdempotencyCustomerAndClone(t *testing.T) {
	a := newTenant(t)
	src := newScene(t, a, "idem-c", 4)

	key := idemKey(t)
	put := do(t, "PUT", "/api/v1/external-user", withKey(a.keys("idem-c"), key), `{"displayName":"Ada"}`)
	require.Equal(t, 200, put.Status, string(put.Raw))
	requireReplay(t, put, do(t, "PUT", "/api/v1/external-user", withKey(a.keys("idem-c"), key), `{"displayName":"Ada"}`))
	requireIdemError(t, do(t, "PUT", "/api/v1/external-user", withKey(a.keys("idem-c"), key), `{"displayName":"Bob"}`),
		422, idempotency.CodeReused)
	require.Equal(t, "Ada", eu(do(t, "GET", "/api/v1/external-user", a.keys("idem-c"), nil).Body)["displayName"])
	// The same key on another method of the same path is another key.
	ck := idemKey(t)
	clone := do(t, "POST", clonePath(src["id"].(string)), withKey(a.keys("idem-c"), ck), nil)
	if clone.Status == 202 {
		// Wait for the job, then the retry still gets the first answer (202 with its job).
		done, _ := pollClone(t, a, "idem-c", src["id"].(string), clone.Body["jobId"].(string))
		require.Equal(t, 200, done.Status, string(done.Raw))
	} else {
		require.Equal(t, 201, clone.Status, string(clone.Raw))
	}
	requireReplay(t, clone, do(t, "POST", clonePath(src["id"].(string)), withKey(a.keys("idem-c"), ck), nil))
	ids, _ := listPage(t, a, "idem-c", "")
	require.Len(t, ids, 2, "one source and one clone: the retry cloned nothing")

	dk := idemKey(t)
	del := do(t, "DELETE", "/api/v1/external-user", withKey(a.keys("idem-c"), dk), nil)
	require.Equal(t, 200, del.Status, string(del.Raw))
	require.Equal(t, float64(2), del.Body["deletedSplatCount"], string(del.Raw))
	// The replay is the first answer (two scenes deleted), not a second delete's (none left).
	requireReplay(t, del, do(t, "DELETE", "/api/v1/external-user", withKey(a.keys("idem-c"), dk), nil))
	require.Equal(t, float64(0), do(t, "DELETE", "/api/v1/external-user", a.keys("idem-c"), nil).Body["deletedSplatCount"])
}

// TestIdempotencyKeyInUse: while the first request with a key runs, a retry gets 409 and acts
// not; once it finished, the retry gets its answer.
func TestIdempotencyKeyInUse(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "idem-busy", nil)
	// Hold the customer's row, which PUT locks, so that the first request waits inside the service.
	ctx := context.Background()
	tx, err := env.Process.DB.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM external_users WHERE integration_id = $1 AND external_user_id = $2 FOR UPDATE`,
		a.IntegrationID, "idem-busy")
	require.NoError(t, err)

	key := idemKey(t)
	body := `{"displayName":"First"}`
	firstc := make(chan *testenv.Response, 1)
	go func() {
		r, err := testenv.Do(env.URL, "PUT", "/api/v1/external-user", withKey(a.keys("idem-busy"), key), body)
		if err != nil {
			r = &testenv.Response{Raw: []byte(err.Error())}
		}
		firstc <- r
	}()
	// Once the first request holds the key (it then waits on the row), the retry is refused.
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, env.Process.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys
			WHERE integration_id = $1 AND key = $2 AND status = 0`, a.IntegrationID, key).Scan(&n))
		return n == 1
	}, 10*time.Second, 20*time.Millisecond, "the first request claims its key")
	busy := do(t, "PUT", "/api/v1/external-user", withKey(a.keys("idem-busy"), key), body)
	requireIdemError(t, busy, 409, idempotency.CodeInUse)
	require.Equal(t, "1", busy.Header.Get("Retry-After"))
	// Another body is a reuse even while the first runs.
	requireIdemError(t, do(t, "PUT", "/api/v1/external-user", withKey(a.keys("idem-busy"), key), `{"displayName":"Other"}`),
		422, idempotency.CodeReused)
	select {
	case r := <-firstc:
		t.Fatalf("the first request finished while its row was locked: %d %s", r.Status, r.Raw)
	default:
	}

	require.NoError(t, tx.Rollback(ctx))
	var first *testenv.Response
	select {
	case first = <-firstc:
	case <-time.After(10 * time.Second):
		t.Fatal("the first request did not finish")
	}
	require.Equal(t, 200, first.Status, string(first.Raw))
	requireReplay(t, first, do(t, "PUT", "/api/v1/external-user", withKey(a.keys("idem-busy"), key), body))
}

// TestIdempotencyServerErrorNotKept: a 5xx answer is forgotten, so a retry with the same key runs
// again; and a key is one key across gateway processes (they share Postgres).
func TestIdempotencyServerErrorNotKept(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := env.Config
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	ints := credentials.NewCache(env.Process.DB.Pool, log)
	go ints.Listen(ctx)
	keys, err := sessiontoken.NewKeys(cfg.SessionKeys)
	require.NoError(t, err)
	// A gateway whose user service is down: every external-user call answers 502.
	gw, err := gateway.New(gateway.Options{
		Log: log, BodyLimit: cfg.BodyLimit, AdminToken: cfg.AdminToken, InternalSecret: []byte(cfg.InternalSecret),
		Integrations: ints, Sessions: allinone.SessionVerifier(keys, ints),
		Idempotency: idempotency.NewStore(env.Process.DB.Pool, log),
		Upstreams: []gateway.Upstream{
			{Name: "user", Prefixes: routes.User, URL: "http://127.0.0.1:1"},
			{Name: "scene", Prefixes: routes.Scene, URL: "http://127.0.0.1:1"},
		},
	})
	require.NoError(t, err)
	down := serve(t, ctx, gw)
	require.Eventually(t, ints.Live, 10*time.Second, 20*time.Millisecond)

	a := newTenant(t)
	key := idemKey(t)
	body := `{"displayName":"Retried"}`
	// An injected fault, not an answer of the document: sent past the OpenAPI recorder, as the
	// chaos suite sends its faults (chaosDo).
	r, err := restclient.Do(down, "PUT", "/api/v1/external-user", withKey(a.keys("idem-5xx"), key), body)
	require.NoError(t, err)
	require.Equal(t, 502, r.Status, string(r.Raw))
	// The retry, through the working gateway, runs: the 502 was not kept.
	first := do(t, "PUT", "/api/v1/external-user", withKey(a.keys("idem-5xx"), key), body)
	require.Equal(t, 200, first.Status, string(first.Raw))
	require.Empty(t, first.Header.Get(idempotency.ReplayedHeader))
	// Its answer is kept for every gateway: the broken one replays it without reaching the service.
	requireReplay(t, first, doAt(t, down, "PUT", "/api/v1/external-user", withKey(a.keys("idem-5xx"), key), body))
}

// TestIdempotencyBadKeys: a malformed key is a 400 that acts not; the header is ignored on
// routes it does not cover; a key older than 24 h is free again.
func TestIdempotencyBadKeys(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "idem-bad", nil)
	body := `{"fileName":"scene.splat","contentType":"application/splat","fileSize":64}`
	for name, key := range map[string]string{
		"too long":  strings.Repeat("k", 256),
		"space":     "two words",
		"non-ASCII": "clé",
		"tab":       "a\tb",
	} {
		t.Run(name, func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "POST", "/api/v1/uploads/splat-file", withKey(a.keys("idem-bad"), key), body), 400)
			require.True(t, issuesMention(issues, idempotency.KeyHeader), "%v", issues)
		})
	}
	require.Equal(t, 0, ticketCount(t, a, "idem-bad"), "a refused key issued nothing")

	// Raw requests: an empty key, a NUL byte, the header twice.
	raw := func(keyLines string) (int, string) {
		return rawRequest(t, "POST /api/v1/uploads/splat-file HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"+
			"Authorization: Bearer "+a.SecretKey+"\r\nX-Service-Public-Key: "+a.PublicKey+"\r\n"+
			"X-Service-External-User-Id: idem-bad\r\nContent-Type: application/json\r\n"+keyLines+
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
	}
	for name, lines := range map[string]string{
		"empty": "Idempotency-Key: \r\n",
		"NUL":   "Idempotency-Key: a\x00b\r\n",
		"twice": "Idempotency-Key: one\r\nIdempotency-Key: two\r\n",
	} {
		status, text := raw(lines)
		require.Equal(t, 400, status, "%s: %s", name, text)
		require.Contains(t, text, `"status":"error"`, name)
	}
	require.Equal(t, 0, ticketCount(t, a, "idem-bad"))
	status, text := raw("Idempotency-Key: " + strings.Repeat("~", 255) + "\r\n")
	require.Equal(t, 200, status, "255 visible characters are a key: %s", text)

	// A route the protocol does not cover ignores the header, even a malformed one.
	r := do(t, "GET", "/api/v1/external-user", withKey(a.keys("idem-bad"), "two words"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))

	// After 24 h a key is free: the same key with another body runs.
	key := idemKey(t)
	require.Equal(t, 200, do(t, "POST", "/api/v1/uploads/splat-file", withKey(a.keys("idem-bad"), key), body).Status)
	requireIdemError(t, do(t, "POST", "/api/v1/uploads/splat-file", withKey(a.keys("idem-bad"), key),
		strings.Replace(body, "64", "96", 1)), 422, idempotency.CodeReused)
	exec(t, `UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second' WHERE integration_id = $1 AND key = $2`,
		a.IntegrationID, key)
	r = do(t, "POST", "/api/v1/uploads/splat-file", withKey(a.keys("idem-bad"), key), strings.Replace(body, "64", "96", 1))
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Empty(t, r.Header.Get(idempotency.ReplayedHeader))
}

// TestIdempotencyRacingRetriesOfOneCommit: 100 concurrent retries of one commit under one key
// (a client retrying hard after lost answers) make one scene, charged once; every other answer
// is a replay of the first or 409 IDEMPOTENCY_KEY_IN_USE, none a second 201 or a 5xx.
func TestIdempotencyRacingRetriesOfOneCommit(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "racer", nil)
	data := splatBytes(64)
	fileURL := uploadFile(t, a, "racer", "race.splat", "application/splat", data)
	body := fmt.Sprintf(`{"title":"raced","splatUrl":%q}`, fileURL)
	key := idemKey(t)
	const n = 100
	answers := make([]*testenv.Response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			r, err := testenv.Do(env.URL, "POST", "/api/v1/splats", withKey(a.keys("racer"), key), body)
			require.NoError(t, err)
			answers[i] = r
		})
	}
	close(start)
	wg.Wait()
	var created *testenv.Response
	replays, inUse := 0, 0
	for _, r := range answers {
		switch {
		case r.Status == 201 && r.Header.Get(idempotency.ReplayedHeader) == "":
			require.Nil(t, created, "a second first answer: %s", r.Raw)
			created = r
		case r.Status == 409:
			requireIdemError(t, r, 409, idempotency.CodeInUse)
			inUse++
		default:
			require.Equal(t, "true", r.Header.Get(idempotency.ReplayedHeader), "%d %s", r.Status, r.Raw)
			replays++
		}
	}
	require.NotNil(t, created, "one request ran")
	for _, r := range answers {
		if r.Header.Get(idempotency.ReplayedHeader) == "true" {
			requireReplay(t, created, r)
		}
	}
	t.Logf("1 created, %d replays, %d in use", replays, inUse)
	ids, _ := listPage(t, a, "racer", "")
	require.Equal(t, []string{splatOf(created)["id"].(string)}, ids, "one scene")
	used, scenes := usageOf(t, a, "racer")
	require.Equal(t, int64(1), scenes)
	require.Equal(t, int64(len(data)), used, "storage charged once")
}
