//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/sdk/go/webhook"
)

// seqEvent is one delivery as an ordering receiver reads it.
type seqEvent struct {
	ID       string // webhook-id
	Type     string
	Sequence int64
	SplatID  string
	Title    string // data.splat.title of the splat item events
	At       time.Time
	Body     []byte
}

// sequenced reads a received delivery's type, sequence and scene.
func sequenced(g received) seqEvent {
	var b struct {
		Type     string `json:"type"`
		Sequence int64  `json:"sequence"`
		Data     struct {
			Splat struct {
				ID    string `json:"id"`
				Title string `json:"title"`
			} `json:"splat"`
			SplatID string `json:"splatId"`
		} `json:"data"`
	}
	_ = json.Unmarshal(g.Body, &b)
	id := b.Data.SplatID
	if id == "" {
		id = b.Data.Splat.ID
	}
	return seqEvent{ID: g.ID, Type: b.Type, Sequence: b.Sequence, SplatID: id, Title: b.Data.Splat.Title, At: g.At, Body: g.Body}
}

// bySplat groups what arrived by scene, in arrival order, one entry per webhook-id (delivery is
// at least once: a repeat of an id is the same event).
func bySplat(gs []received) map[string][]seqEvent {
	seen := map[string]bool{}
	out := map[string][]seqEvent{}
	for _, g := range gs {
		if seen[g.ID] {
			continue
		}
		seen[g.ID] = true
		e := sequenced(g)
		out[e.SplatID] = append(out[e.SplatID], e)
	}
	return out
}

// inversions counts the pairs that arrived in the opposite order of their sequences.
func inversions(arrived []seqEvent) int {
	n := 0
	for i := range arrived {
		for j := i + 1; j < len(arrived); j++ {
			if arrived[i].Sequence > arrived[j].Sequence {
				n++
			}
		}
	}
	return n
}

// bySequence is the events sorted by their sequence.
func bySequence(evs []seqEvent) []seqEvent {
	out := slices.Clone(evs)
	slices.SortStableFunc(out, func(a, b seqEvent) int { return int(a.Sequence - b.Sequence) })
	return out
}

// latestOf feeds the events in arrival order through the Go SDK's ordering rule and returns the
// event it keeps for the scene.
func latestOf(t *testing.T, arrived []seqEvent) *webhook.Event {
	t.Helper()
	var l webhook.Latest
	var kept *webhook.Event
	for _, e := range arrived {
		var ev webhook.Event
		require.NoError(t, json.Unmarshal(e.Body, &ev))
		newer, err := l.Apply(&ev)
		require.NoError(t, err)
		if newer {
			kept = &ev
		}
	}
	return kept
}

// TestWebhookSequenceOrdersAScene holds the receiver at 503 while a scene is created, renamed
// five times and deleted, then lets it answer: the seven deliveries may arrive in any order, but
// their sequences, sorted, give created < t1 < … < t5 < deleted, strictly increasing, one per
// event, and the SDK's rule (keep the highest sequence per resource) ends on the deletion.
func TestWebhookSequenceOrdersAScene(t *testing.T) {
	tn := newTenant(t)
	rcv := newReceiver(t)
	rcv.status.Store(503)
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL,
		"events": []string{events.SplatCreated, events.SplatUpdated, events.SplatDeleted}})
	id := commitScene(t, tn, "order", 10)["id"].(string)
	titles := []string{"t1", "t2", "t3", "t4", "t5"}
	for _, title := range titles {
		r := do(t, "PATCH", "/api/v1/splats/"+id, tn.keys("order"), map[string]any{"title": title})
		require.Equal(t, 200, r.Status, string(r.Raw))
	}
	r := do(t, "DELETE", "/api/v1/splats/"+id, tn.keys("order"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	const want = 7
	require.Eventually(t, func() bool {
		log := deliveries(t, tn, w["id"].(string))
		if len(log) != want {
			return false
		}
		for _, d := range log {
			if d["state"] != "pending" || d["lastStatusCode"] != 503.0 {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond, "every first attempt failed")
	time.Sleep(6 * time.Second) // a retry or two each, on their own jittered timers
	rcv.status.Store(200)
	settled(t, tn, w["id"].(string), rcv)

	arrived := bySplat(rcv.all())[id]
	require.Len(t, arrived, want, "one delivery per event")
	ordered := bySequence(arrived)
	var types, got []string
	for i, e := range ordered {
		require.Positive(t, e.Sequence, "%s carries a sequence: %s", e.Type, e.Body)
		if i > 0 {
			require.Greater(t, e.Sequence, ordered[i-1].Sequence, "strictly increasing, one number per event")
		}
		types = append(types, e.Type)
		if e.Type == events.SplatUpdated {
			got = append(got, e.Title)
		}
	}
	require.Equal(t, []string{events.SplatCreated, events.SplatUpdated, events.SplatUpdated, events.SplatUpdated,
		events.SplatUpdated, events.SplatUpdated, events.SplatDeleted}, types, "the sequences give the causal order")
	require.Equal(t, titles, got, "the updates in the order they were made")
	requireDocumentedBodies(t, arrived)
	kept := latestOf(t, arrived)
	require.NotNil(t, kept)
	require.Equal(t, events.SplatDeleted, kept.Type, "the receiver's rule ends on the deletion, whatever the arrival order")
	t.Logf("arrival order inverted %d of %d pairs", inversions(arrived), want*(want-1)/2)
}

// requireDocumentedBodies holds each delivery's body to the OpenAPI document's WebhookEvent.
func requireDocumentedBodies(t *testing.T, evs []seqEvent) {
	t.Helper()
	schema, err := contract.doc.Schema("/components/schemas/WebhookEvent")
	require.NoError(t, err)
	for _, e := range evs {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(e.Body))
		require.NoError(t, err)
		require.NoError(t, schema.Validate(v), "%s", e.Body)
	}
}

// TestWebhookEmitCost measures what the sequence costs a writer: transactions per second that
// each emit one event to one endpoint (the whole of a writer's webhook work), alternating 3 s
// slices of plain Emit with slices that draw one more number from the sequence, on 1 and 8
// connections. Opt in with SPLATHOST_MEASURE_EMIT=1: it is a measure, not a promise.
func TestWebhookEmitCost(t *testing.T) {
	if os.Getenv("SPLATHOST_MEASURE_EMIT") == "" {
		t.Skip("a measure: set SPLATHOST_MEASURE_EMIT=1")
	}
	tn := newTenant(t)
	rcv := newReceiver(t)
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL, "events": []string{events.ExternalUserDeleted}})
	ctx := context.Background()
	outbox := &events.Outbox{}
	db := env.Process.DB.Ent
	run := func(conns int, extra bool, d time.Duration) int64 {
		var n atomic.Int64
		var wg sync.WaitGroup
		until := time.Now().Add(d)
		for c := range conns {
			wg.Go(func() {
				for i := 0; time.Now().Before(until); i++ {
					var b events.Batch
					tx, err := db.Tx(ctx)
					require.NoError(t, err)
					if extra {
						_, err = tx.ExecContext(ctx, "SELECT nextval('webhook_event_seq')")
						require.NoError(t, err)
					}
					require.NoError(t, outbox.Emit(ctx, tx, &b, tn.IntegrationID, events.ExternalUserDeleted,
						events.Value(events.ExternalUserData{ExternalUserID: "cost-" + strconv.Itoa(c) + "-" + strconv.Itoa(i)})))
					require.NoError(t, tx.Commit())
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return n.Load()
	}
	extra := os.Getenv("SPLATHOST_MEASURE_EMIT") == "extra"
	for _, conns := range []int{1, 8} {
		var plain, more int64
		const slice, rounds = 3 * time.Second, 4
		for range rounds {
			plain += run(conns, false, slice)
			if extra {
				more += run(conns, true, slice)
			}
		}
		secs := float64(rounds) * slice.Seconds()
		t.Logf("%d connections: Emit %.0f tx/s; with one more nextval %.0f tx/s", conns, float64(plain)/secs, float64(more)/secs)
	}
	require.Equal(t, 200, do(t, "DELETE", "/api/v1/webhooks/"+w["id"].(string), tn.keys(""), nil).Status)
	_, err := env.Process.DB.Pool.Exec(ctx, "DELETE FROM webhook_deliveries WHERE endpoint_id = $1", w["id"])
	require.NoError(t, err)
}
