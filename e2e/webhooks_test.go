package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/sdk/go/webhook"
)

// received is one delivery a test receiver got.
type received struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Event                    struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	At time.Time
}

// receiver is a real local HTTP server standing for an integrator's webhook endpoint. status
// is what it answers (200 unless a test sets it); delay holds each answer.
type receiver struct {
	srv    *httptest.Server
	status atomic.Int32
	delay  atomic.Int64
	mu     sync.Mutex
	got    []received
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.status.Store(200)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if d := time.Duration(r.delay.Load()); d > 0 {
			time.Sleep(d)
		}
		status := int(r.status.Load())
		if status >= 200 && status < 300 {
			rec := received{ID: req.Header.Get("webhook-id"), Timestamp: req.Header.Get("webhook-timestamp"),
				Signature: req.Header.Get("webhook-signature"), Body: body, At: time.Now()}
			_ = json.Unmarshal(body, &rec.Event)
			r.mu.Lock()
			r.got = append(r.got, rec)
			r.mu.Unlock()
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// ofType lists what arrived of one event type.
func (r *receiver) ofType(typ string) []received {
	var out []received
	for _, g := range r.all() {
		if g.Event.Type == typ {
			out = append(out, g)
		}
	}
	return out
}

// ids counts the distinct webhook-ids that arrived.
func (r *receiver) ids() map[string]int {
	out := map[string]int{}
	for _, g := range r.all() {
		out[g.ID]++
	}
	return out
}

// verifyIndependently checks a delivery's signature without the SDK: HMAC-SHA256 over
// id.timestamp.body with the base64-decoded part of the secret after whsec_, any of the
// space-separated v1 signatures.
func verifyIndependently(secret string, g received) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(g.ID + "." + g.Timestamp + "." + string(g.Body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, s := range strings.Split(g.Signature, " ") {
		if s == want {
			return true
		}
	}
	return false
}

// verifySDK checks a delivery with the Go SDK's Verify.
func verifySDK(secret string, g received) error {
	h := http.Header{}
	h.Set("webhook-id", g.ID)
	h.Set("webhook-timestamp", g.Timestamp)
	h.Set("webhook-signature", g.Signature)
	return webhook.Verify(secret, h, g.Body)
}

// createWebhook registers url for the tenant and returns the webhook.
func createWebhook(t *testing.T, tn tenant, body map[string]any) map[string]any {
	t.Helper()
	r := do(t, "POST", "/api/v1/webhooks", tn.keys(""), body)
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	w := r.Body["webhook"].(map[string]any)
	require.True(t, strings.HasPrefix(w["secret"].(string), "whsec_"), w)
	return w
}

// deliveries reads the whole delivery log of a webhook, following nextCursor.
func deliveries(t *testing.T, tn tenant, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		path := "/api/v1/webhooks/" + id + "/deliveries?limit=7"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := do(t, "GET", path, tn.keys(""), nil)
		require.Equal(t, 200, r.Status, string(r.Raw))
		for _, d := range r.Body["deliveries"].([]any) {
			out = append(out, d.(map[string]any))
		}
		next, _ := r.Body["nextCursor"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}

// TestWebhookEveryEventType makes every kind of change the contract names and checks that a
// local receiver gets each event type, signed so that both the SDK's Verify and an independent
// implementation accept it, with the data the contract gives each type.
func TestWebhookEveryEventType(t *testing.T) {
	tn := newTenant(t)
	rcv := newReceiver(t)
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL + "/hooks", "description": "all events"})
	secret := w["secret"].(string)
	require.ElementsMatch(t, events.Types, w["events"])
	ctx := context.Background()

	// splat.created (+ splat.ready once the rendition lands: above the harness's threshold).
	sc := commitScene(t, tn, "hooked", testenv.RenditionMinBytes/32+1000)
	id := sc["id"].(string)
	// splat.updated, then splat.updated + splat.published.
	r := do(t, "PATCH", "/api/v1/splats/"+id, tn.keys("hooked"), map[string]any{"title": "Renamed"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	r = do(t, "PATCH", "/api/v1/splats/"+id, tn.keys("hooked"), map[string]any{"visibility": "public"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	// clone.succeeded and splat.created of the copy.
	r = do(t, "POST", clonePath(id), tn.keys("hooked"), nil)
	require.Equal(t, 201, r.Status, string(r.Raw))
	copyID := r.Body["splatId"].(string)
	// clone.failed: the customer's allocation cannot hold another copy.
	r = do(t, "GET", "/api/v1/external-user", tn.keys("hooked"), nil)
	used := r.Body["externalUser"].(map[string]any)["usedBytes"].(float64)
	r = do(t, "PUT", "/api/v1/external-user", tn.keys("hooked"), map[string]any{"limitBytes": int64(used)})
	require.Equal(t, 200, r.Status, string(r.Raw))
	r = do(t, "POST", clonePath(id), tn.keys("hooked"), nil)
	require.Equal(t, 413, r.Status, string(r.Raw))
	// retention.archived then retention.restored.
	r = do(t, "PUT", "/api/v1/external-user", tn.keys("hooked"), map[string]any{"billingState": "suspended", "keepSplatIds": []string{id}, "limitBytes": int64(used), "maxSplats": 5})
	require.Equal(t, 200, r.Status, string(r.Raw))
	r = do(t, "PUT", "/api/v1/external-user", tn.keys("hooked"), map[string]any{"billingState": "active", "status": "active", "limitBytes": 1 << 28})
	require.Equal(t, 200, r.Status, string(r.Raw))
	// retention.purged: a scene archived 45 days ago whose timer fires now.
	old := commitScene(t, tn, "hooked", 10)
	archivedAt := time.Now().Add(-45 * retentionDay).UTC().Truncate(time.Microsecond)
	archiveSceneAt(t, old["id"].(string), archivedAt, false)
	require.True(t, runRetention(t, tn, "hooked", old["id"].(string), archivedAt).Removed)
	// splat.deleted.
	r = do(t, "DELETE", "/api/v1/splats/"+copyID, tn.keys("hooked"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	// externalUser.deleted, with splat.deleted for the scene it takes along.
	gone := commitScene(t, tn, "leaving", 10)
	r = do(t, "DELETE", "/api/v1/external-user", tn.keys("leaving"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))

	require.Eventually(t, func() bool {
		for _, typ := range events.Types {
			if len(rcv.ofType(typ)) == 0 {
				return false
			}
		}
		return true
	}, 3*time.Minute, 250*time.Millisecond, "every event type arrives; got %v", typesOf(rcv.all()))
	settled(t, tn, w["id"].(string), rcv)

	for _, g := range rcv.all() {
		require.NoError(t, verifySDK(secret, g), "SDK verify of %s", g.Event.Type)
		require.True(t, verifyIndependently(secret, g), "independent verify of %s", g.Event.Type)
		_, err := time.Parse(time.RFC3339, g.Event.Timestamp)
		require.NoError(t, err, "timestamp is ISO 8601")
		ts, err := strconv.ParseInt(g.Timestamp, 10, 64)
		require.NoError(t, err)
		require.InDelta(t, time.Now().Unix(), ts, 600)
	}
	created := rcv.ofType(events.SplatCreated)
	require.Len(t, created, 4, "got %v; the first commit, the clone, the retention scene and the leaving customer's", typesOf(rcv.all()))
	first := created[0].Event.Data["splat"].(map[string]any)
	require.Equal(t, id, first["id"])
	require.Equal(t, "hooked", first["externalUserId"])
	require.Equal(t, false, first["isOwner"])
	require.Equal(t, "public", rcv.ofType(events.SplatPublished)[0].Event.Data["splat"].(map[string]any)["visibility"])
	require.Equal(t, "Renamed", rcv.ofType(events.SplatUpdated)[0].Event.Data["splat"].(map[string]any)["title"])
	ready := rcv.ofType(events.SplatReady)[0].Event.Data["splat"].(map[string]any)
	require.Equal(t, id, ready["id"])
	require.Contains(t, []any{"ready", "failed"}, ready["processing"].(map[string]any)["state"])
	ok := rcv.ofType(events.CloneSucceeded)[0].Event.Data
	require.Equal(t, copyID, ok["splatId"])
	require.Equal(t, id, ok["sourceSplatId"])
	require.NotEmpty(t, ok["jobId"])
	failed := rcv.ofType(events.CloneFailed)[0].Event.Data
	require.Equal(t, id, failed["sourceSplatId"])
	require.NotEmpty(t, failed["message"])
	require.NotEmpty(t, failed["jobId"])
	require.Equal(t, map[string]any{"externalUserId": "leaving"}, rcv.ofType(events.ExternalUserDeleted)[0].Event.Data)
	deleted := map[any]bool{}
	for _, g := range rcv.ofType(events.SplatDeleted) {
		deleted[g.Event.Data["splatId"]] = true
	}
	require.True(t, deleted[copyID] && deleted[gone["id"]], "splat.deleted for the DELETE and the customer's scene")
	require.Equal(t, old["id"], rcv.ofType(events.RetentionPurged)[0].Event.Data["splatId"])
	require.Equal(t, "hooked", rcv.ofType(events.RetentionPurged)[0].Event.Data["externalUserId"])
	for _, typ := range []string{events.RetentionArchived, events.RetentionRestored} {
		got := map[any]bool{}
		for _, g := range rcv.ofType(typ) {
			got[g.Event.Data["splatId"]] = true
		}
		require.False(t, got[id], "%s: the kept scene was not archived", typ)
	}

	_ = ctx
}

// settled waits until every delivery of the webhook's log succeeded and arrived, and checks
// the log: each row succeeded with status 200, each id received.
func settled(t *testing.T, tn tenant, webhookID string, rcv *receiver) []map[string]any {
	t.Helper()
	var log []map[string]any
	require.Eventually(t, func() bool {
		log = deliveries(t, tn, webhookID)
		got := rcv.ids()
		for _, d := range log {
			if d["state"] != "succeeded" || got[d["id"].(string)] == 0 {
				return false
			}
		}
		return len(got) == len(log)
	}, 3*time.Minute, 250*time.Millisecond, "every delivery of the log arrives")
	for _, d := range log {
		require.EqualValues(t, 200, d["lastStatusCode"], d)
		require.GreaterOrEqual(t, d["attempts"].(float64), 1.0)
		require.Nil(t, d["nextAttemptAt"])
	}
	return log
}

func typesOf(gs []received) map[string]int {
	out := map[string]int{}
	for _, g := range gs {
		out[g.Event.Type]++
	}
	return out
}
