package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/sdk/go/webhook"
)

// Shape of the webhook measures: webhookEvents externalUser.deleted events (a PUT then a DELETE
// of a fresh customer each), emitted by webhookClients integrator connections, delivered to one
// local receiver that answers 204 at once.
const (
	webhookEvents  = 2000
	webhookClients = 16
)

// GoalWebhookP99 is the contract's "delivered within 10 s while the receiver answers 2xx".
var GoalWebhookP99 = &Goal{Target: 10_000, Unit: "ms"}

// webhookRows are the webhook measures' rows.
type webhookRows struct{ rate, p50, p99, lost Row }

func newWebhookRows() *webhookRows {
	what := fmt.Sprintf("%d events, %d integrator connections, allinone", webhookEvents, webhookClients)
	return &webhookRows{
		rate: Row{Name: "webhook deliveries end to end, " + what, Unit: "deliveries/s"},
		p50:  Row{Name: "webhook event-to-delivery latency p50, " + what, Unit: "ms"},
		p99:  Row{Name: "webhook event-to-delivery latency p99, " + what, Unit: "ms", Goal: GoalWebhookP99},
		lost: Row{Name: "webhook events still pending 2 min after the last was emitted (not lost: in the outbox), " + what, Unit: "events"},
	}
}

func (wr *webhookRows) all() []*Row { return []*Row{&wr.rate, &wr.p50, &wr.p99, &wr.lost} }

// webhookPhase starts an all-in-one stack on a cold directory of its own and runs the webhook
// measures on it.
func (r *runner) webhookPhase(ctx context.Context, ready *Row, wr *webhookRows) {
	if !r.coldPhase(ctx, "webhooks", testenv.StackOptions{Services: "allinone"}, ready, func(st *testenv.Stack) {
		r.withTenant(st, "webhooks", func(t Tenant) {
			if err := r.webhooks(ctx, st, t, wr); err != nil {
				failRows(err, wr.all()...)
			}
		}, wr.all()...)
	}) {
		failRows(ready.Err, wr.all()...)
	}
}

// webhooks registers a local receiver, emits the events through the API and measures how fast
// they arrive: deliveries per second from the first event to the last arrival, and each event's
// latency from its timestamp (written in the changing transaction) to its arrival.
func (r *runner) webhooks(ctx context.Context, st *testenv.Stack, t Tenant, wr *webhookRows) error {
	var mu sync.Mutex
	arrived := map[string]time.Duration{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(req.Body)
		var e webhook.Event // the SDK's, as a receiver decodes it
		if json.Unmarshal(body, &e) == nil {
			if d, err := e.ExternalUser(); err == nil {
				mu.Lock()
				if _, dup := arrived[d.ExternalUserID]; !dup {
					arrived[d.ExternalUserID] = now.Sub(e.Timestamp)
				}
				mu.Unlock()
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	base := st.State.GatewayURL
	resp, err := testenv.Do(base, http.MethodPost, "/api/v1/webhooks", t.Headers(), map[string]any{
		"url": srv.URL, "events": []string{"externalUser.deleted"}})
	if err != nil || resp.Status != http.StatusCreated {
		return fmt.Errorf("register the receiver: %v %v", err, resp)
	}
	start := time.Now()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range webhookClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > webhookEvents {
					return
				}
				h := t.Headers()
				h[externalUserHeader] = "hooked-" + strconv.FormatInt(i, 10)
				if r, err := testenv.Do(base, http.MethodPut, "/api/v1/external-user", h, map[string]any{}); err != nil || r.Status != 200 {
					failed.Add(1)
					continue
				}
				if r, err := testenv.Do(base, http.MethodDelete, "/api/v1/external-user", h, nil); err != nil || r.Status != 200 {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d event-making requests failed", n)
	}
	emitted := time.Since(start)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= webhookEvents || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	mu.Lock()
	lat := make([]time.Duration, 0, len(arrived))
	for _, d := range arrived {
		lat = append(lat, d)
	}
	mu.Unlock()
	slices.Sort(lat)
	wr.lost.Value = float64(webhookEvents - len(lat))
	if len(lat) == 0 {
		return fmt.Errorf("no delivery arrived")
	}
	wr.rate.Value = float64(len(lat)) / elapsed.Seconds()
	wr.p50.Value = float64(lat[len(lat)/2].Microseconds()) / 1000
	wr.p99.Value = float64(lat[len(lat)*99/100].Microseconds()) / 1000
	r.o.Log.Info("webhooks measured", "events", webhookEvents, "emitted", emitted, "lastArrival", elapsed, "arrived", len(lat))
	return nil
}
