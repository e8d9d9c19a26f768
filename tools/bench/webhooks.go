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

// Shape of the isolation measure (issue 38): integration A has webhookSlowEndpoints endpoints
// on one receiver that takes webhookSlowDelay per request and makes webhookSlowEvents events
// (one delivery per endpoint each); integration B then makes webhookQuietEvents, one after
// another, to a receiver that answers at once.
const (
	webhookSlowEndpoints = 20
	webhookSlowEvents    = 20
	webhookSlowDelay     = 9 * time.Second
	webhookQuietEvents   = 20
)

// GoalWebhookP99 is the contract's "delivered within 10 s while the receiver answers 2xx".
var GoalWebhookP99 = &Goal{Target: 10_000, Unit: "ms"}

// GoalWebhookIsolatedP99 is issue 38's bound on another integration's deliveries while one
// integration's backlog hangs on a slow receiver.
var GoalWebhookIsolatedP99 = &Goal{Target: 1_000, Unit: "ms"}

// webhookRows are the webhook measures' rows.
type webhookRows struct{ rate, p50, p99, lost, isoP50, isoP99 Row }

func newWebhookRows() *webhookRows {
	what := fmt.Sprintf("%d events, %d integrator connections, allinone", webhookEvents, webhookClients)
	wr := &webhookRows{
		rate: Row{Name: "webhook deliveries end to end, " + what, Unit: "deliveries/s"},
		p50:  Row{Name: "webhook event-to-delivery latency p50, " + what, Unit: "ms"},
		p99:  Row{Name: "webhook event-to-delivery latency p99, " + what, Unit: "ms", Goal: GoalWebhookP99},
		lost: Row{Name: "webhook events still pending 2 min after the last was emitted (not lost: in the outbox), " + what, Unit: "events"},
	}
	iso := fmt.Sprintf("integration B, %d events one after another, during integration A's burst of %d deliveries to %d endpoints on a %s receiver, allinone",
		webhookQuietEvents, webhookSlowEndpoints*webhookSlowEvents, webhookSlowEndpoints, webhookSlowDelay)
	wr.isoP50 = Row{Name: "webhook event-to-delivery latency p50, " + iso, Unit: "ms"}
	wr.isoP99 = Row{Name: "webhook event-to-delivery latency p99, " + iso, Unit: "ms", Goal: GoalWebhookIsolatedP99}
	return wr
}

func (wr *webhookRows) all() []*Row {
	return []*Row{&wr.rate, &wr.p50, &wr.p99, &wr.lost, &wr.isoP50, &wr.isoP99}
}

// webhookPhase starts an all-in-one stack on a cold directory of its own and runs the webhook
// measures on it.
func (r *runner) webhookPhase(ctx context.Context, ready *Row, wr *webhookRows) {
	if !r.coldPhase(ctx, "webhooks", testenv.StackOptions{Services: "allinone"}, ready, func(st *testenv.Stack) {
		r.withTenant(st, "webhooks", func(t Tenant) {
			if err := r.webhooks(ctx, st, t, wr); err != nil {
				failRows(err, &wr.rate, &wr.p50, &wr.p99, &wr.lost)
			}
		}, wr.all()...)
		if err := r.webhookIsolation(ctx, st, wr); err != nil {
			failRows(err, &wr.isoP50, &wr.isoP99)
		}
	}) {
		failRows(ready.Err, wr.all()...)
	}
}

// webhooks registers a local receiver, emits the events through the API and measures how fast
// they arrive: deliveries per second from the first event to the last arrival, and each event's
// latency from its timestamp (written in the changing transaction) to its arrival.
func (r *runner) webhooks(ctx context.Context, st *testenv.Stack, t Tenant, wr *webhookRows) error {
	srv, arrived := newArrivalServer(0)
	defer srv.Close()
	base := st.State.GatewayURL
	if err := registerWebhook(base, t, srv.URL); err != nil {
		return err
	}
	start := time.Now()
	if err := emitDeletions(ctx, base, t, "hooked-", webhookEvents, webhookClients); err != nil {
		return err
	}
	emitted := time.Since(start)
	arrived.wait(ctx, webhookEvents, 2*time.Minute)
	elapsed := time.Since(start)
	lat := arrived.sorted()
	wr.lost.Value = float64(webhookEvents - len(lat))
	if len(lat) == 0 {
		return fmt.Errorf("no delivery arrived")
	}
	wr.rate.Value = float64(len(lat)) / elapsed.Seconds()
	wr.p50.Value, wr.p99.Value = ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100])
	r.o.Log.Info("webhooks measured", "events", webhookEvents, "emitted", emitted, "lastArrival", elapsed, "arrived", len(lat))
	return nil
}

// webhookIsolation measures another integration's delivery latency while one integration's
// backlog hangs on a slow receiver (issue 38): A's endpoints and events, then, once A's
// receiver holds requests, B's events one after another.
func (r *runner) webhookIsolation(ctx context.Context, st *testenv.Stack, wr *webhookRows) error {
	base := st.State.GatewayURL
	a, err := SetupTenant(base, st.State.AdminToken, "webhooks-slow")
	if err != nil {
		return fmt.Errorf("tenant setup: %w", err)
	}
	b, err := SetupTenant(base, st.State.AdminToken, "webhooks-quiet")
	if err != nil {
		return fmt.Errorf("tenant setup: %w", err)
	}
	slow, slowArrived := newArrivalServer(webhookSlowDelay)
	defer slow.Close()
	quick, quickArrived := newArrivalServer(0)
	defer quick.Close()
	for i := range webhookSlowEndpoints {
		if err := registerWebhook(base, a, slow.URL+"/e"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	if err := registerWebhook(base, b, quick.URL); err != nil {
		return err
	}
	if err := emitDeletions(ctx, base, a, "slow-", webhookSlowEvents, 4); err != nil {
		return err
	}
	if slowArrived.wait(ctx, 1, time.Minute) == 0 {
		return fmt.Errorf("A's slow receiver got nothing")
	}
	if err := emitDeletions(ctx, base, b, "quiet-", webhookQuietEvents, 1); err != nil {
		return err
	}
	quickArrived.wait(ctx, webhookQuietEvents, 2*time.Minute)
	lat := quickArrived.sorted()
	if len(lat) < webhookQuietEvents {
		return fmt.Errorf("%d of B's %d events arrived within 2 min", len(lat), webhookQuietEvents)
	}
	wr.isoP50.Value, wr.isoP99.Value = ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100])
	r.o.Log.Info("webhook isolation measured", "quietP99", lat[len(lat)*99/100], "slowReceived", slowArrived.len())
	return nil
}

// arrivals are the externalUser.deleted events a receiver got: each customer's first
// latency from the event's timestamp (written in the changing transaction) to its arrival.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Duration
}

// newArrivalServer is a local receiver that records each event on arrival and answers 204
// after delay.
func newArrivalServer(delay time.Duration) (*httptest.Server, *arrivals) {
	a := &arrivals{at: map[string]time.Duration{}}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(req.Body)
		var e webhook.Event // the SDK's, as a receiver decodes it
		if json.Unmarshal(body, &e) == nil {
			if d, err := e.ExternalUser(); err == nil {
				a.mu.Lock()
				if _, dup := a.at[d.ExternalUserID]; !dup {
					a.at[d.ExternalUserID] = now.Sub(e.Timestamp)
				}
				a.mu.Unlock()
			}
		}
		time.Sleep(delay)
		w.WriteHeader(http.StatusNoContent)
	})), a
}

func (a *arrivals) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.at)
}

// wait returns how many arrived once n have, or after within.
func (a *arrivals) wait(ctx context.Context, n int, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		got := a.len()
		if got >= n || time.Now().After(deadline) || ctx.Err() != nil {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sorted are the latencies, shortest first.
func (a *arrivals) sorted() []time.Duration {
	a.mu.Lock()
	lat := make([]time.Duration, 0, len(a.at))
	for _, d := range a.at {
		lat = append(lat, d)
	}
	a.mu.Unlock()
	slices.Sort(lat)
	return lat
}

// registerWebhook registers url for the tenant's externalUser.deleted events.
func registerWebhook(base string, t Tenant, url string) error {
	resp, err := testenv.Do(base, http.MethodPost, "/api/v1/webhooks", t.Headers(), map[string]any{
		"url": url, "events": []string{"externalUser.deleted"}})
	if err != nil || resp.Status != http.StatusCreated {
		return fmt.Errorf("register the receiver: %v %v", err, resp)
	}
	return nil
}

// emitDeletions makes n externalUser.deleted events of the tenant (a PUT then a DELETE of a
// fresh customer each, named prefix+i) over clients connections.
func emitDeletions(ctx context.Context, base string, t Tenant, prefix string, n, clients int) error {
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				h := t.HeadersFor(prefix + strconv.FormatInt(i, 10))
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
	if k := failed.Load(); k > 0 {
		return fmt.Errorf("%d event-making requests failed", k)
	}
	return nil
}
