//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/internal/uploadrules"
)

// parkUpload is uploadSplat for a test that needs more uploaded, uncommitted files of one
// customer than the bound on open uploads keeps open: the ticket's window is moved a minute
// into the past, so it holds no room any more, and it stays committable in the commit's grace.
func parkUpload(t *testing.T, tn tenant, eu string, body []byte) string {
	t.Helper()
	url := uploadSplat(t, tn, eu, body)
	backdate(t, ticketPrefix(keyOf(t, url)), "1 minute")
	return url
}

// openUploadsOf counts eu's open tickets (uncommitted, unexpired) in Postgres, with what they
// declare.
func openUploadsOf(t *testing.T, tn tenant, eu string) (n int, bytes int64) {
	t.Helper()
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(t.total_bytes), 0)
		FROM upload_tickets t JOIN external_users u ON u.id = t.owner_id
		WHERE u.integration_id = $1 AND u.external_user_id = $2 AND t.committed_at IS NULL AND t.expires_at > now()`,
		tn.IntegrationID, eu).Scan(&n, &bytes))
	return n, bytes
}

// splatFileAsk is a splat-file upload request of size bytes.
func splatFileAsk(size int64) map[string]any {
	return map[string]any{"fileName": "scene.splat", "contentType": "application/splat", "fileSize": size}
}

// raceUploads sends n splat-file requests of size bytes at once and returns the answers.
func raceUploads(t *testing.T, path string, headers map[string]string, n int, size int64) []*testenv.Response {
	t.Helper()
	answers := make([]*testenv.Response, n)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := testenv.Do(env.URL, "POST", path, headers, splatFileAsk(size))
			if err == nil {
				answers[i] = r
			}
		}()
	}
	wg.Wait()
	return answers
}

// requireTooManyOpen checks the 429 of the bound: the spec's envelope, its code and scope,
// Retry-After, and a message that says how to free room.
func requireTooManyOpen(t *testing.T, r *testenv.Response, scope string) {
	t.Helper()
	requireEnvelope(t, r, 429)
	require.Equal(t, quota.CodeTooManyOpenUploads, r.Body["code"], string(r.Raw))
	require.Equal(t, scope, r.Body["scope"], string(r.Raw))
	after, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After: %q", r.Header.Get("Retry-After"))
	require.Positive(t, after)
	msg := r.Body["message"].(string)
	for _, how := range []string{"commit", "abort", "expire"} {
		require.Contains(t, msg, how)
	}
}

// tally counts the answers: 200s, the bound's 429s, and rate-limit 429s; anything else fails.
func tally(t *testing.T, answers []*testenv.Response) (ok, bound, limited int) {
	t.Helper()
	for _, r := range answers {
		require.NotNil(t, r, "every request is answered")
		switch {
		case r.Status == 200:
			ok++
		case r.Status == 429 && r.Body["code"] == quota.CodeTooManyOpenUploads:
			bound++
		case r.Status == 429 && r.Body["code"] == "RATE_LIMITED":
			limited++
		default:
			t.Fatalf("unexpected answer %d: %s", r.Status, r.Raw)
		}
	}
	return ok, bound, limited
}

// TestOpenUploadsBoundHoldsUnderARace: 200 upload requests at once against the count bound,
// and 200 more against the byte bound, for a customer with limitBytes 1000. The bound holds
// exactly: 20 tickets of small files, and as many 2 GiB files as fit the customer's remaining
// storage plus one largest file. Usage shows what they hold apart from the charged bytes.
func TestOpenUploadsBoundHoldsUnderARace(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "racer", map[string]any{"limitBytes": 1000})
	start := time.Now()
	ok, bound, limited := tally(t, raceUploads(t, "/api/v1/uploads/splat-file", a.keys("racer"), 200, 100))
	t.Logf("200 upload requests at once: %d signed, %d refused by the bound, %d rate limited, in %v", ok, bound, limited, time.Since(start))
	require.Equal(t, quota.MaxOpenUploads, ok, "bound %d, rate limited %d", bound, limited)
	n, declared := openUploadsOf(t, a, "racer")
	require.Equal(t, quota.MaxOpenUploads, n)
	require.EqualValues(t, quota.MaxOpenUploads*100, declared)
	requireTooManyOpen(t, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("racer"), splatFileAsk(100)), "customer")

	u := do(t, "GET", "/api/v1/external-user/usage", a.keys("racer"), nil)
	require.Equal(t, 200, u.Status, string(u.Raw))
	usage := u.Body["usage"].(map[string]any)
	require.EqualValues(t, 0, usage["storage"].(map[string]any)["usedBytes"], "open uploads are not charged")
	require.Equal(t, map[string]any{"count": float64(quota.MaxOpenUploads), "bytes": float64(quota.MaxOpenUploads * 100),
		"maxCount": float64(quota.MaxOpenUploads), "maxBytes": float64(1000 + uploadrules.MaxFileBytes)}, usage["openUploads"])

	// Bytes: 2 GiB files against 1000 bytes of room plus one 20 GiB file: ten fit.
	ensureCustomer(t, a, "hoarder", map[string]any{"limitBytes": 1000})
	const big = 2 << 30
	ok, bound, limited = tally(t, raceUploads(t, "/api/v1/uploads/splat-file", a.keys("hoarder"), 200, big))
	fit := (1000 + uploadrules.MaxFileBytes) / big
	require.EqualValues(t, fit, ok, "bound %d, rate limited %d", bound, limited)
	n, declared = openUploadsOf(t, a, "hoarder")
	require.EqualValues(t, fit, n)
	require.LessOrEqual(t, declared, int64(1000+uploadrules.MaxFileBytes))
	r := do(t, "POST", "/api/v1/uploads/splat-file", a.keys("hoarder"), splatFileAsk(big))
	requireTooManyOpen(t, r, "customer")
	require.EqualValues(t, 1000+uploadrules.MaxFileBytes, r.Body["maxOpenUploadBytes"])
	// A small file still fits beside them.
	require.Equal(t, 200, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("hoarder"), splatFileAsk(100)).Status)
}

// TestOpenUploadsCommitStillAnswers413: the bound leaves room for one upload larger than the
// customer's remaining storage, so the commit answers the spec's 413, and a commit frees the
// room its ticket held.
func TestOpenUploadsCommitStillAnswers413(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "tight", map[string]any{"limitBytes": 1000})
	url := uploadSplat(t, a, "tight", splatBytes(64)) // 2 048 bytes, above the 1 000 left
	r := do(t, "POST", "/api/v1/splats", a.keys("tight"), map[string]any{"title": "too big", "splatUrl": url})
	requireEnvelope(t, r, 413)
	require.Equal(t, "STORAGE_QUOTA_EXCEEDED", r.Body["code"])
	require.Equal(t, "customer", r.Body["scope"])
	require.EqualValues(t, 2048, r.Body["requestedBytes"])

	// The refused commit's upload goes (an asset purge, in the background) and its room with it.
	eventually(t, "the refused commit's upload is purged", func() bool { n, _ := openUploadsOf(t, a, "tight"); return n == 0 },
		func() string { return purgeMark(t, a.IntegrationID) })
	// Filled to the count bound, a commit gives one ticket's room back at once.
	for range quota.MaxOpenUploads - 1 {
		require.Equal(t, 200, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("tight"), splatFileAsk(32)).Status)
	}
	fits := uploadSplat(t, a, "tight", splatBytes(1))
	requireTooManyOpen(t, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("tight"), splatFileAsk(32)), "customer")
	c := do(t, "POST", "/api/v1/splats", a.keys("tight"), map[string]any{"title": "fits", "splatUrl": fits})
	require.Equal(t, 201, c.Status, string(c.Raw))
	require.Equal(t, 200, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("tight"), splatFileAsk(32)).Status)
}

// TestOpenUploadsAbortFreesRoomAtOnce: a customer at the bound whose open uploads include a
// multipart one gets room back the moment it is aborted.
func TestOpenUploadsAbortFreesRoomAtOnce(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "aborter", nil)
	mp := startMultipart(t, a, "aborter", 6<<20)
	for i := 1; i < quota.MaxOpenUploads; i++ {
		require.Equal(t, 200, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("aborter"), splatFileAsk(32)).Status)
	}
	requireTooManyOpen(t, do(t, "POST", mpPath, a.keys("aborter"),
		map[string]any{"fileName": "big.splat", "contentType": "application/splat", "fileSize": 6 << 20, "multipart": true}), "customer")

	require.Equal(t, 200, do(t, "DELETE", mpPath+"/"+mp["uploadId"].(string), a.keys("aborter"), nil).Status)
	u := do(t, "GET", "/api/v1/external-user/usage", a.keys("aborter"), nil)
	require.EqualValues(t, quota.MaxOpenUploads-1, u.Body["usage"].(map[string]any)["openUploads"].(map[string]any)["count"])
	require.Equal(t, 200, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("aborter"), splatFileAsk(32)).Status)
}

// TestOpenUploadsPerEditorSession: an editor session holds at most 3 open uploads, whatever
// kind, even under a race; another session of the same customer, and the integration's keys,
// keep their own room.
func TestOpenUploadsPerEditorSession(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "eve", nil)
	first := sessionHeaders(editorToken(t, a, "eve"))
	ok, bound, limited := tally(t, raceUploads(t, editorPath("/uploads/splat-file"), first, 30, 64))
	require.Equal(t, quota.MaxOpenUploadsPerSession, ok, "bound %d, rate limited %d", bound, limited)
	for _, rt := range editorRoutes("")[1:5] { // every upload kind
		requireTooManyOpen(t, do(t, rt.method, rt.path, first, rt.body), "session")
	}
	// Another session: another token (a mint in the same second with the same claims would sign
	// the same token, which is the same session).
	second := sessionHeaders(mintToken(t, a, "eve", map[string]any{"type": "editor", "user": map[string]any{"name": "Eve 2"}}))
	r := do(t, "POST", editorPath("/uploads/audio"), second, map[string]any{"fileName": "a.mp3", "contentType": "audio/mpeg", "fileSize": 10})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, 200, do(t, "POST", "/api/v1/uploads/splat-file", a.keys("eve"), splatFileAsk(64)).Status)
	n, _ := openUploadsOf(t, a, "eve")
	require.Equal(t, quota.MaxOpenUploadsPerSession+2, n)
}

// TestOrphanSweepDropsIdleMultipartUploads: a multipart upload whose parts stopped arriving an
// hour ago goes at the next sweep, with its room, though its expiresAt is a day away; one whose
// last part is fresh stays.
func TestOrphanSweepDropsIdleMultipartUploads(t *testing.T) {
	a, st, file := sweepSetup(t, "idler")
	const size = sweepFileSize

	idle := startMultipart(t, a, "idler", size)
	idlePrefix := ticketPrefix(keyOf(t, idle["fileUrl"].(string)))
	busy := startMultipart(t, a, "idler", size)
	busyPrefix := ticketPrefix(keyOf(t, busy["fileUrl"].(string)))
	status, _ := putPart(t, partURLs(t, busy["parts"])[1], file[:mpPartSize])
	require.Equal(t, 200, status)
	// Both started two hours ago; only the busy one stored a part since.
	for _, p := range []string{idlePrefix, busyPrefix} {
		tag, err := env.Process.DB.Pool.Exec(context.Background(),
			`UPDATE upload_tickets SET created_at = now() - interval '2 hours' WHERE prefix = $1`, p)
		require.NoError(t, err)
		require.EqualValues(t, 1, tag.RowsAffected())
	}

	runOrphanSweep(t)

	require.False(t, ticketExists(t, idlePrefix))
	require.Empty(t, storeUploads(t, st, idlePrefix), "the store's multipart state is aborted")
	requireEnvelope(t, do(t, "GET", mpPath+"/"+idle["uploadId"].(string), a.keys("idler"), nil), 404)
	require.True(t, ticketExists(t, busyPrefix))
	require.Len(t, storeUploads(t, st, busyPrefix), 1)
	n, _ := openUploadsOf(t, a, "idler")
	require.Equal(t, 1, n)
}
