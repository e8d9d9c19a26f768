//go:build e2e

package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/internal/webhookstart"
	"github.com/splathost/splathost/sdk/go/webhook"
	"github.com/splathost/splathost/workflows"
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
	// active counts requests being answered; peak is its highest value.
	active, peak atomic.Int32
	mu           sync.Mutex
	got          []received
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.status.Store(200)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := r.active.Add(1)
		defer r.active.Add(-1)
		for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
		}
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

// splatIn is the splat of the event among evs that is about scene id.
func splatIn(t *testing.T, evs []received, id string) map[string]any {
	t.Helper()
	for _, g := range evs {
		if sp, _ := g.Event.Data["splat"].(map[string]any); sp != nil && sp["id"] == id {
			return sp
		}
	}
	require.Failf(t, "no event about the scene", "%s among %d events", id, len(evs))
	return nil
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
	r = cloneAnswer(t, tn, "hooked", id, do(t, "POST", clonePath(id), tn.keys("hooked"), nil))
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

	eventually(t, "every event type arrives", func() bool {
		for _, typ := range events.Types {
			if len(rcv.ofType(typ)) == 0 {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprint(typesOf(rcv.all()), " ", deliveryMark(tn.IntegrationID)) })
	settled(t, tn, w["id"].(string), rcv)

	for _, g := range rcv.all() {
		require.NoError(t, verifySDK(secret, g), "SDK verify of %s", g.Event.Type)
		require.True(t, verifyIndependently(secret, g), "independent verify of %s", g.Event.Type)
		_, err := time.Parse(time.RFC3339, g.Event.Timestamp)
		require.NoError(t, err, "timestamp is ISO 8601")
		ts, err := strconv.ParseInt(g.Timestamp, 10, 64)
		require.NoError(t, err)
		require.InDelta(t, time.Now().Unix(), ts, 600)
		require.Positive(t, sequenced(g).Sequence, "%s carries a sequence", g.Event.Type)
	}
	for _, evs := range bySplat(rcv.all()) { // every body, each once, held to the OpenAPI document
		requireDocumentedBodies(t, evs)
	}
	created := rcv.ofType(events.SplatCreated)
	require.Len(t, created, 4, "got %v; the first commit, the clone, the retention scene and the leaving customer's", typesOf(rcv.all()))
	// Deliveries of different scenes come in any order (the sequence is per scene; the cluster
	// shape's two workers show it), so the first commit's is found by its id.
	first := splatIn(t, created, id)
	require.Equal(t, "hooked", first["externalUserId"])
	require.Equal(t, false, first["isOwner"])
	require.Equal(t, "public", rcv.ofType(events.SplatPublished)[0].Event.Data["splat"].(map[string]any)["visibility"])
	require.Equal(t, "Renamed", rcv.ofType(events.SplatUpdated)[0].Event.Data["splat"].(map[string]any)["title"])
	ready := splatIn(t, rcv.ofType(events.SplatReady), id)
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
	eventually(t, "every delivery of the log arrives", func() bool {
		log = deliveries(t, tn, webhookID)
		got := rcv.ids()
		for _, d := range log {
			if d["state"] != "succeeded" || got[d["id"].(string)] == 0 {
				return false
			}
		}
		return len(got) == len(log)
	}, func() string { return fmt.Sprint(len(rcv.ids()), " received ", deliveryMark(tn.IntegrationID)) })
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

// TestWebhookRegistryRefusesBadInput attacks the registry: bad URLs, unknown event types, bodies
// it does not know, other tenants' ids — every answer a clear 4xx with the envelope, nothing
// written.
func TestWebhookRegistryRefusesBadInput(t *testing.T) {
	tn := newTenant(t)
	rcv := newReceiver(t)
	for name, body := range map[string]any{
		"ftp":            map[string]any{"url": "ftp://example.com/hook"},
		"no host":        map[string]any{"url": "https:///hook"},
		"relative":       map[string]any{"url": "/hook"},
		"2 KB":           map[string]any{"url": "https://example.com/" + strings.Repeat("a", 2048)},
		"NUL":            map[string]any{"url": "https://example.com/\u0000"},
		"space":          map[string]any{"url": "https://exa mple.com/"},
		"credentials":    map[string]any{"url": "https://user:pw@example.com/"},
		"unknown event":  map[string]any{"url": rcv.srv.URL, "events": []string{"splat.exploded"}},
		"no events":      map[string]any{"url": rcv.srv.URL, "events": []string{}},
		"events null":    map[string]any{"url": rcv.srv.URL, "events": nil},
		"duplicate":      map[string]any{"url": rcv.srv.URL, "events": []string{"splat.created", "splat.created"}},
		"unknown field":  map[string]any{"url": rcv.srv.URL, "secret": "whsec_AAAA"},
		"long text":      map[string]any{"url": rcv.srv.URL, "description": strings.Repeat("x", 501)},
		"url not string": map[string]any{"url": 42},
		"no url":         map[string]any{"description": "x"},
	} {
		r := do(t, "POST", "/api/v1/webhooks", tn.keys(""), body)
		requireEnvelope(t, r, 400)
		require.NotContains(t, string(r.Raw), "whsec_", name)
	}
	r := do(t, "POST", "/api/v1/webhooks", tn.keys(""), "not json")
	requireEnvelope(t, r, 400)
	r = do(t, "POST", "/api/v1/webhooks", map[string]string{"Authorization": "Bearer " + tn.SecretKey}, map[string]any{"url": rcv.srv.URL})
	requireEnvelope(t, r, 401)
	r = do(t, "GET", "/api/v1/webhooks", tn.keys(""), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Empty(t, r.Body["webhooks"], "nothing was registered")

	// Another tenant's endpoint and deliveries answer 404 exactly like unknown ones.
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL, "events": []string{"splat.created"}})
	commitScene(t, tn, "owner", 10)
	log := settled(t, tn, w["id"].(string), rcv)
	require.Len(t, log, 1)
	other := newTenant(t)
	id, did := w["id"].(string), log[0]["id"].(string)
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/api/v1/webhooks/" + id},
		{"POST", "/api/v1/webhooks/" + id + "/rotate"},
		{"GET", "/api/v1/webhooks/" + id + "/deliveries"},
		{"POST", "/api/v1/webhooks/" + id + "/deliveries/" + did + "/redeliver"},
	} {
		theirs := do(t, c.method, c.path, other.keys(""), nil)
		unknown := do(t, c.method, strings.Replace(c.path, id, "0123456789abcdef01234567", 1), tn.keys(""), nil)
		malformed := do(t, c.method, strings.Replace(c.path, id, "nope", 1), tn.keys(""), nil)
		requireEnvelope(t, theirs, 404)
		requireEnvelope(t, unknown, 404)
		requireEnvelope(t, malformed, 404)
		require.Equal(t, unknown.Body["message"], theirs.Body["message"], "%s %s tells nothing", c.method, c.path)
	}
	r = do(t, "POST", "/api/v1/webhooks/"+id+"/deliveries/0123456789abcdef01234567/redeliver", tn.keys(""), nil)
	requireEnvelope(t, r, 404)
	r = do(t, "GET", "/api/v1/webhooks/"+id+"/deliveries?limit=0", tn.keys(""), nil)
	requireEnvelope(t, r, 400)
	r = do(t, "GET", "/api/v1/webhooks/"+id+"/deliveries?cursor=%21%21", tn.keys(""), nil)
	requireEnvelope(t, r, 400)
	r = do(t, "GET", "/api/v1/webhooks", other.keys(""), nil)
	require.Empty(t, r.Body["webhooks"], "another tenant lists none of them")

	// A create retried under one Idempotency-Key registers once and replays the first answer
	// (its secret included: the caller lost it with the first answer); another body is 422.
	key := idemKey(t)
	hook := map[string]any{"url": rcv.srv.URL, "events": []string{"splat.deleted"}}
	first := do(t, "POST", "/api/v1/webhooks", withKey(tn.keys(""), key), hook)
	require.Equal(t, 201, first.Status, string(first.Raw))
	requireReplay(t, first, do(t, "POST", "/api/v1/webhooks", withKey(tn.keys(""), key), hook))
	hook["description"] = "another body"
	requireIdemError(t, do(t, "POST", "/api/v1/webhooks", withKey(tn.keys(""), key), hook), 422, idempotency.CodeReused)
	r = do(t, "GET", "/api/v1/webhooks", tn.keys(""), nil)
	require.Len(t, r.Body["webhooks"], 2, "the retried create registered one endpoint")
	require.Equal(t, 200, do(t, "DELETE", "/api/v1/webhooks/"+first.Body["webhook"].(map[string]any)["id"].(string), tn.keys(""), nil).Status)

	// The list never shows a secret; delete stops deliveries.
	r = do(t, "GET", "/api/v1/webhooks", tn.keys(""), nil)
	require.Len(t, r.Body["webhooks"], 1)
	require.NotContains(t, string(r.Raw), "whsec_")
	r = do(t, "DELETE", "/api/v1/webhooks/"+id, tn.keys(""), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	requireEnvelope(t, do(t, "DELETE", "/api/v1/webhooks/"+id, tn.keys(""), nil), 404)
	commitScene(t, tn, "owner", 10)
	time.Sleep(2 * time.Second)
	require.Len(t, rcv.all(), 1, "a deleted endpoint receives nothing")
}

// TestWebhookReceiverDownThenUp holds the receiver at 503 for a while: the deliveries are
// retried with backoff (visible in the log), and once it answers 200 every event arrives, none
// lost, each webhook-id kept across its retries.
func TestWebhookReceiverDownThenUp(t *testing.T) {
	tn := newTenant(t)
	rcv := newReceiver(t)
	rcv.status.Store(503)
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL, "events": []string{"splat.created", "splat.deleted"}})
	var want []string
	for i := range 6 {
		sc := commitScene(t, tn, "down"+strconv.Itoa(i%2), 10)
		want = append(want, sc["id"].(string))
	}
	// The first attempts fail; the log shows them pending with the status and the next attempt.
	require.Eventually(t, func() bool {
		log := deliveries(t, tn, w["id"].(string))
		if len(log) != len(want) {
			return false
		}
		for _, d := range log {
			if d["state"] != "pending" || d["lastStatusCode"] != 503.0 || d["nextAttemptAt"] == nil {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond, "failed attempts are logged")
	time.Sleep(6 * time.Second)
	rcv.status.Store(200)
	log := settled(t, tn, w["id"].(string), rcv)
	require.Len(t, log, len(want))
	retried := 0
	for _, d := range log {
		if d["attempts"].(float64) > 1 {
			retried++
		}
	}
	require.Equal(t, len(want), retried, "every delivery needed a retry")
	got := map[any]bool{}
	for _, g := range rcv.ofType(events.SplatCreated) {
		got[g.Event.Data["splat"].(map[string]any)["id"]] = true
	}
	for _, id := range want {
		require.True(t, got[id], "scene %s announced", id)
	}
	require.Len(t, rcv.ids(), len(want), "one webhook-id per event, kept across retries")
	// With SPLATHOST_RECORD_HISTORY=1: the history workflows' replay test replays.
	recordHistory(t, workflows.WebhookDeliveryID(log[0]["id"].(string)), "", "webhook_delivery_handed_off.json")
}

// TestWebhookRotationOverlap rotates a secret: deliveries then carry two signatures, one by each
// secret, so a receiver on either verifies them; redelivery sends the same webhook-id again.
func TestWebhookRotationOverlap(t *testing.T) {
	tn := newTenant(t)
	rcv := newReceiver(t)
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL, "events": []string{"splat.created"}})
	oldSecret := w["secret"].(string)
	commitScene(t, tn, "rot", 10)
	settled(t, tn, w["id"].(string), rcv)
	before := rcv.all()[0]
	require.NotContains(t, before.Signature, " ", "one secret, one signature")

	r := do(t, "POST", "/api/v1/webhooks/"+w["id"].(string)+"/rotate", tn.keys(""), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	newSecret := r.Body["webhook"].(map[string]any)["secret"].(string)
	require.NotEqual(t, oldSecret, newSecret)
	commitScene(t, tn, "rot", 10)
	log := settled(t, tn, w["id"].(string), rcv)
	require.Len(t, log, 2)
	after := rcv.all()[1]
	require.Len(t, strings.Split(after.Signature, " "), 2, "both secrets sign during the overlap")
	for _, s := range []string{oldSecret, newSecret} {
		require.NoError(t, verifySDK(s, after))
		require.True(t, verifyIndependently(s, after))
	}
	require.Error(t, verifySDK(newSecret, before), "the old delivery was signed by the old secret only")

	// Redeliver: 202, the same id arrives again.
	r = do(t, "POST", "/api/v1/webhooks/"+w["id"].(string)+"/deliveries/"+before.ID+"/redeliver", tn.keys(""), nil)
	require.Equal(t, 202, r.Status, string(r.Raw))
	eventually(t, "the deliveries", func() bool { return rcv.ids()[before.ID] == 2 }, func() string { return deliveryMark(tn.IntegrationID) })
}

// TestWebhookSurvivesWorkerKill kills the worker process (SIGKILL) while it is delivering to a
// slow receiver and starts another: every event still arrives (at least once), counted by
// webhook-id, and the log closes every delivery as succeeded. The events are written by the
// product's own outbox function in a transaction, and their workflows started on a task queue
// only the killed worker serves.
func TestWebhookSurvivesWorkerKill(t *testing.T) {
	tn := newTenant(t)
	rcv := newReceiver(t)
	rcv.delay.Store(int64(700 * time.Millisecond))
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL, "events": []string{events.ExternalUserDeleted}})
	ctx := context.Background()
	queue := "webhook-crash-" + ids.New()
	first := workerProcess(t, queue, "worker-webhook-1.log")

	const n = 24
	var batch events.Batch
	outbox := &events.Outbox{}
	tx, err := env.Process.DB.Ent.Tx(ctx)
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, outbox.Emit(ctx, tx, &batch, tn.IntegrationID, events.ExternalUserDeleted,
			events.Value(events.ExternalUserData{ExternalUserID: "gone-" + strconv.Itoa(i)})))
	}
	require.NoError(t, tx.Commit())
	require.Len(t, batch.Deliveries(), n)
	(&webhookstart.HandOff{Client: env.Process.Temporal, TaskQueue: queue, Ent: env.Process.DB.Ent,
		Log: slog.New(slog.DiscardHandler)}).StartDeliveries(ctx, batch.Deliveries())

	eventually(t, "the deliveries", func() bool { return len(rcv.ids()) >= 3 }, func() string { return deliveryMark(tn.IntegrationID) })
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	killedAt := len(rcv.ids())
	require.Less(t, killedAt, n, "the kill lands while deliveries remain")
	workerProcess(t, queue, "worker-webhook-2.log")

	log := settled(t, tn, w["id"].(string), rcv)
	require.Len(t, log, n)
	got := map[any]bool{}
	for _, g := range rcv.all() {
		got[g.Event.Data["externalUserId"]] = true
	}
	require.Len(t, got, n, "every event arrived")
	t.Logf("killed after %d of %d; %d requests received for %d deliveries", killedAt, n, len(rcv.all()), n)
}

// TestWebhookCLI drives the registry through splathostctl: create, list, deliveries, redeliver,
// rotate, delete, and a refusal printed as the error envelope.
func TestWebhookCLI(t *testing.T) {
	tn := newTenant(t)
	rcv := newReceiver(t)
	keys := []string{"--public-key", tn.PublicKey, "--secret-key", tn.SecretKey}
	var created []map[string]any
	ctlJSON(t, &created, append([]string{"webhooks", "create", rcv.srv.URL, "--events", "splat.created,splat.deleted"}, keys...)...)
	require.Len(t, created, 1)
	id := created[0]["id"].(string)
	require.True(t, strings.HasPrefix(created[0]["secret"].(string), "whsec_"))
	var listed []map[string]any
	ctlJSON(t, &listed, append([]string{"webhooks", "list"}, keys...)...)
	require.Len(t, listed, 1)
	require.Nil(t, listed[0]["secret"])
	commitScene(t, tn, "cli", 10)
	settled(t, tn, id, rcv)
	var page struct {
		Deliveries []map[string]any `json:"deliveries"`
	}
	ctlJSON(t, &page, append([]string{"webhooks", "deliveries", id}, keys...)...)
	require.Len(t, page.Deliveries, 1)
	require.Equal(t, "succeeded", page.Deliveries[0]["state"])
	did := page.Deliveries[0]["id"].(string)
	r := runCtl(t, append([]string{"webhooks", "redeliver", id, did}, keys...)...)
	require.NoError(t, r.err, "%s", r.stderr)
	require.Equal(t, "redelivered delivery "+did+" of webhook "+id+"; its attempt shows in `webhooks deliveries "+id+"`\n", string(r.stdout))
	eventually(t, "the deliveries", func() bool { return rcv.ids()[did] == 2 }, func() string { return deliveryMark(tn.IntegrationID) })
	var rotated []map[string]any
	ctlJSON(t, &rotated, append([]string{"webhooks", "rotate", id}, keys...)...)
	require.NotEqual(t, created[0]["secret"], rotated[0]["secret"])
	e := ctlError(t, append([]string{"webhooks", "create", "ftp://example.com"}, keys...)...)
	require.EqualValues(t, 400, e["status"])
	var deleted map[string]any
	ctlJSON(t, &deleted, append([]string{"webhooks", "delete", id}, keys...)...)
	require.Equal(t, map[string]any{"webhookId": id, "deleted": true}, deleted)
	require.EqualValues(t, 404, ctlError(t, append([]string{"webhooks", "rotate", id}, keys...)...)["status"])
}
