package events

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// handOffs records what a Dispatcher handed to the durable path.
type handOffs struct {
	mu sync.Mutex
	ds []Delivery
}

func (h *handOffs) StartDeliveries(_ context.Context, ds []Delivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ds = append(h.ds, ds...)
}

func (h *handOffs) all() []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Delivery(nil), h.ds...)
}

func newDispatcher(attempt func(context.Context, Delivery) (AttemptOutcome, error), h Starter) *Dispatcher {
	return &Dispatcher{Attempt: attempt, HandOff: h, PerEndpoint: 4, Workers: 8, MaxWait: 2 * time.Second,
		MaxQueued: 1000, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func burst(endpoint string, n int) []Delivery {
	ds := make([]Delivery, n)
	for i := range ds {
		ds[i] = Delivery{ID: fmt.Sprintf("%s-%04d", endpoint, i), WebhookID: endpoint, Type: SplatCreated}
	}
	return ds
}

func waitIdle(t *testing.T, x *Dispatcher) {
	t.Helper()
	require.Eventually(t, func() bool { q, a := x.Held(); return q == 0 && a == 0 }, 10*time.Second, 5*time.Millisecond)
}

// TestDispatcherBoundsAndFairness: a burst to one endpoint never has more than PerEndpoint
// attempts in flight for it, nor more than Workers in all, each delivery is attempted once, and
// another endpoint's deliveries are served beside the burst rather than after it.
func TestDispatcherBoundsAndFairness(t *testing.T) {
	var mu sync.Mutex
	inflight := map[string]int{}
	maxPer, maxAll, all := map[string]int{}, 0, 0
	attempted := map[string]int{}
	var quietDone atomic.Int64
	var burstDone atomic.Int64
	h := &handOffs{}
	x := newDispatcher(func(_ context.Context, d Delivery) (AttemptOutcome, error) {
		mu.Lock()
		inflight[d.WebhookID]++
		all++
		maxPer[d.WebhookID] = max(maxPer[d.WebhookID], inflight[d.WebhookID])
		maxAll = max(maxAll, all)
		attempted[d.ID]++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		inflight[d.WebhookID]--
		all--
		mu.Unlock()
		if d.WebhookID == "quiet" {
			quietDone.Store(burstDone.Load())
		} else {
			burstDone.Add(1)
		}
		return AttemptClosed, nil
	}, h)
	x.StartDeliveries(context.Background(), burst("loud", 400))
	for _, e := range []string{"a", "b", "c"} {
		x.StartDeliveries(context.Background(), burst(e, 50))
	}
	x.StartDeliveries(context.Background(), burst("quiet", 1))
	waitIdle(t, x)
	require.Len(t, attempted, 551)
	for id, n := range attempted {
		require.Equal(t, 1, n, id)
	}
	for e, m := range maxPer {
		require.LessOrEqual(t, m, 4, e)
	}
	require.LessOrEqual(t, maxAll, 8)
	require.Equal(t, 4, maxPer["loud"], "the burst used its endpoint's slots")
	require.Less(t, quietDone.Load(), int64(100), "the quiet endpoint was served early in the burst")
	require.Empty(t, h.all())
}

// TestDispatcherHandsOffWhatItCannotSettle: a receiver's failure goes to a workflow with one
// attempt counted, an error of ours with none; a closed delivery is not handed off.
func TestDispatcherHandsOffWhatItCannotSettle(t *testing.T) {
	h := &handOffs{}
	x := newDispatcher(func(_ context.Context, d Delivery) (AttemptOutcome, error) {
		switch d.ID {
		case "retry":
			return AttemptRetry, nil
		case "broken":
			return 0, errors.New("database gone")
		}
		return AttemptClosed, nil
	}, h)
	x.StartDeliveries(context.Background(), []Delivery{{ID: "retry", WebhookID: "w"}, {ID: "broken", WebhookID: "w"}, {ID: "ok", WebhookID: "w"}})
	waitIdle(t, x)
	require.Eventually(t, func() bool { return len(h.all()) == 2 }, 5*time.Second, 5*time.Millisecond)
	got := map[string]int{}
	for _, d := range h.all() {
		got[d.ID] = d.Attempted
	}
	require.Equal(t, map[string]int{"retry": 1, "broken": 0}, got)
}

// TestDispatcherWaitsOutBusySlotsThenHandsOff: while other processes hold the endpoint's slots
// the delivery is tried again after a pause, not spun on; once a slot frees it is attempted
// here; one that waits past MaxWait goes to a workflow with no attempt counted.
func TestDispatcherWaitsOutBusySlotsThenHandsOff(t *testing.T) {
	h := &handOffs{}
	var tries atomic.Int64
	var freeAt atomic.Int64
	freeAt.Store(time.Now().Add(500 * time.Millisecond).UnixNano())
	x := newDispatcher(func(_ context.Context, d Delivery) (AttemptOutcome, error) {
		tries.Add(1)
		if d.WebhookID == "stuck" || time.Now().UnixNano() < freeAt.Load() {
			return AttemptBusy, nil
		}
		return AttemptClosed, nil
	}, h)
	x.StartDeliveries(context.Background(), []Delivery{{ID: "soon", WebhookID: "w"}})
	waitIdle(t, x)
	require.Empty(t, h.all(), "attempted here once the slot came free")
	require.LessOrEqual(t, tries.Load(), int64(10), "busy answers are retried after a pause, not in a loop")

	start := time.Now()
	x.StartDeliveries(context.Background(), []Delivery{{ID: "late", WebhookID: "stuck"}})
	require.Eventually(t, func() bool { return len(h.all()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), x.MaxWait)
	require.Equal(t, Delivery{ID: "late", WebhookID: "stuck"}, h.all()[0])
	waitIdle(t, x)
}

// TestDispatcherHandsOffBeyondItsMemoryBound: deliveries beyond MaxQueued are not held; they go
// to workflows at once.
func TestDispatcherHandsOffBeyondItsMemoryBound(t *testing.T) {
	h := &handOffs{}
	release := make(chan struct{})
	x := newDispatcher(func(context.Context, Delivery) (AttemptOutcome, error) {
		<-release
		return AttemptClosed, nil
	}, h)
	x.MaxQueued = 10
	x.StartDeliveries(context.Background(), burst("w", 30))
	require.Eventually(t, func() bool { return len(h.all()) == 20 }, 5*time.Second, 5*time.Millisecond,
		"10 held (4 of them now in flight), 20 handed off")
	close(release)
	waitIdle(t, x)
	require.Len(t, h.all(), 20)
}

// TestDispatcherIsolatesIntegrations: an integration of 20 endpoints whose receivers hang
// (issue 38's 20 endpoints on one 9 s receiver, 400 deliveries) holds at most PerIntegration
// workers, and another integration's delivery, queued behind its whole backlog, is attempted
// while every one of the first integration's attempts still hangs.
func TestDispatcherIsolatesIntegrations(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	inflightA, peakA := 0, 0
	bDone := make(chan struct{})
	h := &handOffs{}
	x := newDispatcher(func(_ context.Context, d Delivery) (AttemptOutcome, error) {
		if d.IntegrationID == "b" {
			close(bDone)
			return AttemptClosed, nil
		}
		mu.Lock()
		inflightA++
		peakA = max(peakA, inflightA)
		mu.Unlock()
		<-release
		mu.Lock()
		inflightA--
		mu.Unlock()
		return AttemptClosed, nil
	}, h)
	x.PerIntegration = 4
	x.MaxWait = time.Minute
	for e := range 20 {
		ds := burst(fmt.Sprintf("a%02d", e), 20)
		for i := range ds {
			ds[i].IntegrationID = "a"
		}
		x.StartDeliveries(context.Background(), ds)
	}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return inflightA == 4 }, 5*time.Second, time.Millisecond,
		"the backlog hangs on its receivers")
	x.StartDeliveries(context.Background(), []Delivery{{ID: "b-1", IntegrationID: "b", WebhookID: "b0", Type: SplatUpdated}})
	select {
	case <-bDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the other integration's delivery waited behind the hanging backlog")
	}
	mu.Lock()
	require.Equal(t, 4, peakA, "the hanging integration held at most its PerIntegration workers")
	require.Equal(t, 4, inflightA, "all of them still hang")
	mu.Unlock()
	close(release)
	waitIdle(t, x)
	require.LessOrEqual(t, peakA, 4)
	require.Empty(t, h.all())
}
