//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/workflows"
)

// TestWebhookDirectDeliveryStartsNoWorkflow: a healthy receiver gets the event from the process
// that committed it, right after the commit: the delivery is closed as succeeded after one
// attempt, and Temporal never saw a workflow for it (only deliveries that need retrying cost a
// workflow).
func TestWebhookDirectDeliveryStartsNoWorkflow(t *testing.T) {
	tn := newTenant(t)
	rcv := newReceiver(t)
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL, "events": []string{"splat.created"}})
	committed := time.Now()
	commitScene(t, tn, "direct", 10)
	log := settled(t, tn, w["id"].(string), rcv)
	require.Len(t, log, 1)
	require.EqualValues(t, 1, log[0]["attempts"])
	t.Logf("delivered %s after the commit answered", rcv.all()[0].At.Sub(committed))
	_, err := env.Process.Temporal.DescribeWorkflowExecution(context.Background(),
		workflows.WebhookDeliveryID(log[0]["id"].(string)), "")
	var nf *serviceerror.NotFound
	require.ErrorAs(t, err, &nf, "no workflow for a delivery settled by its direct attempt")
}

// TestWebhookSurvivesEmitterKill kills the process that wrote the events (the split scene
// service, SIGKILL) while its direct attempts are still delivering them to a slow receiver:
// the rows it held in memory were committed but never attempted, so the webhook re-drive starts
// their workflows and every event still arrives, counted by webhook-id, and the log closes every
// delivery as succeeded.
func TestWebhookSurvivesEmitterKill(t *testing.T) {
	tn := newTenant(t)
	const n = 24
	scenes := make([]string, n)
	for i := range scenes {
		scenes[i] = commitScene(t, tn, "emitter", 10)["id"].(string)
	}
	rcv := newReceiver(t)
	rcv.delay.Store(int64(700 * time.Millisecond))
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL, "events": []string{"splat.updated"}})
	sp := chaosSplit(t, nil)
	for i, id := range scenes {
		r, err := chaosDo(sp.URL, "PATCH", "/api/v1/splats/"+id, tn.keys("emitter"), map[string]any{"title": "Renamed " + strconv.Itoa(i)})
		require.NoError(t, err)
		require.Equal(t, 200, r.Status, string(r.Raw))
	}
	eventually(t, "the deliveries", func() bool { return len(rcv.ids()) >= 2 }, func() string { return deliveryMark(tn.IntegrationID) })
	require.NoError(t, sp.Kill("scene"))
	killedAt := len(rcv.ids())
	require.Less(t, killedAt, n, "the kill lands while deliveries remain")
	started := time.Now()
	// The re-drive (a schedule every minute on the shared stack) starts the workflows of the rows
	// the dead process held once they are 30 s old; run one at that age rather than wait for it.
	time.Sleep(31 * time.Second)
	run, err := env.Process.Temporal.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: "webhook-redrive-test-" + ids.New(), TaskQueue: env.Config.TaskQueue}, workflows.RedriveWebhooks, workflows.WebhookRedriveInput{})
	require.NoError(t, err)
	var res workflows.WebhookRedriveResult
	require.NoError(t, run.Get(context.Background(), &res))
	recordHistory(t, run.GetID(), run.GetRunID(), "redrive_webhooks.json")

	log := settled(t, tn, w["id"].(string), rcv)
	require.Len(t, log, n)
	got := map[any]bool{}
	for _, g := range rcv.all() {
		got[g.Event.Data["splat"].(map[string]any)["id"]] = true
	}
	require.Len(t, got, n, "every event arrived")
	t.Logf("killed after %d of %d; the rest arrived within %s (re-drive); %d requests for %d deliveries",
		killedAt, n, time.Since(started).Round(time.Second), len(rcv.all()), n)
}

// TestWebhookSlowReceiverDelaysNobodyElse: a receiver that takes 2 s per request gets a burst
// of events; it never has more than its endpoint's 4 deliveries in flight at once, and another
// integration's events, written after the burst, arrive before the slow receiver has had all of
// its own.
func TestWebhookSlowReceiverDelaysNobodyElse(t *testing.T) {
	slowTn, fastTn := newTenant(t), newTenant(t)
	slow, fast := newReceiver(t), newReceiver(t)
	slow.delay.Store(int64(2 * time.Second))
	createWebhook(t, slowTn, map[string]any{"url": slow.srv.URL, "events": []string{"splat.created"}})
	fw := createWebhook(t, fastTn, map[string]any{"url": fast.srv.URL, "events": []string{"splat.created"}})
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			commitScene(t, slowTn, "slow"+strconv.Itoa(i%4), 10)
		}()
	}
	wg.Wait()
	for i := range 2 {
		commitScene(t, fastTn, "fast"+strconv.Itoa(i), 10)
	}
	settled(t, fastTn, fw["id"].(string), fast)
	fastLast := fast.all()[1].At
	eventually(t, "every slow delivery arrives", func() bool { return len(slow.ids()) == n },
		func() string { return fmt.Sprint(len(slow.ids()), " received ", deliveryMark(slowTn.IntegrationID)) })
	slowLast := slow.all()[n-1].At
	require.True(t, fastLast.Before(slowLast), "the other integration's events came before the slow burst was through (fast %s, slow %s)",
		fastLast.Format(time.StampMilli), slowLast.Format(time.StampMilli))
	require.LessOrEqual(t, slow.peak.Load(), int32(4), "at most the endpoint's 4 slots in flight")
	t.Logf("slow receiver: peak %d in flight; its last event %s after the other integration's last",
		slow.peak.Load(), slowLast.Sub(fastLast).Round(time.Millisecond))
}

// TestWebhookSlowIntegrationDelaysNoOtherIntegration reproduces issue 38's finding: integration
// A has 20 endpoints on one receiver that takes 9 s per request, and 20 PATCHes make 400
// deliveries. Integration B's events, written one after another while A's backlog hangs, do not
// wait for A: B's first event arrives before A's receiver has answered anything (it did not
// wait for a worker one of A's requests freed), none of B's waits as long as one of A's
// requests takes, neither while the writer's direct attempts hold A's backlog nor once it goes
// on in workflows, all arrive before A's backlog drains, and A never has more than its
// integration's 8 deliveries in flight (not 4 per endpoint, 80 in all). B's latencies are
// reported.
func TestWebhookSlowIntegrationDelaysNoOtherIntegration(t *testing.T) {
	const slowDelay = 9 * time.Second
	a, b := newTenant(t), newTenant(t)
	slow, fast := newReceiver(t), newReceiver(t)
	slow.delay.Store(int64(slowDelay))
	for i := range 20 {
		createWebhook(t, a, map[string]any{"url": slow.srv.URL + "/e" + strconv.Itoa(i), "events": []string{"splat.updated"}})
	}
	createWebhook(t, b, map[string]any{"url": fast.srv.URL, "events": []string{"splat.updated"}})
	aScene := commitScene(t, a, "loud", 10)["id"].(string)
	bScene := commitScene(t, b, "quiet", 10)["id"].(string)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, "PATCH", "/api/v1/splats/"+aScene, a.keys("loud"), map[string]any{"title": "A " + strconv.Itoa(i)})
			require.Equal(t, 200, r.Status, string(r.Raw))
		}()
	}
	wg.Wait()
	eventually(t, "A's backlog hangs on its receiver", func() bool { return slow.active.Load() > 0 },
		func() string { return deliveryMark(a.IntegrationID) })
	// B's events one after another, each waited for; its latencies go to lat.
	const n = 10
	var lat []time.Duration
	bRound := func() {
		for range n {
			i := len(lat)
			sent := time.Now()
			r := do(t, "PATCH", "/api/v1/splats/"+bScene, b.keys("quiet"), map[string]any{"title": "B " + strconv.Itoa(i)})
			require.Equal(t, 200, r.Status, string(r.Raw))
			eventually(t, "B's event arrives", func() bool { return len(fast.all()) == i+1 },
				func() string { return fmt.Sprint(len(fast.all()), " received ", deliveryMark(b.IntegrationID)) })
			lat = append(lat, fast.all()[i].At.Sub(sent))
			require.Less(t, lat[i], slowDelay, "B's delivery %d waited as long as one of A's requests takes", i)
		}
	}
	bRound()
	if aGot := slow.all(); len(aGot) > 0 {
		require.True(t, fast.all()[0].At.Before(aGot[0].At), "B's first event arrived before A's receiver answered anything (B %s, A %s)",
			fast.all()[0].At.Format(time.StampMilli), aGot[0].At.Format(time.StampMilli))
	}
	// A's backlog goes on in workflows once it has waited its 20 s in the writer's memory: the
	// worker's attempts hold the integration's slots from then on. B again, meanwhile.
	eventually(t, "A's backlog goes on in workflows", func() bool { return len(slow.all()) >= 16 },
		func() string { return fmt.Sprint(len(slow.all()), " of A's answered ", deliveryMark(a.IntegrationID)) })
	bRound()
	aDone := len(slow.all())
	require.Less(t, aDone, 400, "B's events all arrived before A's backlog drained")
	require.LessOrEqual(t, slow.peak.Load(), int32(8), "A never had more than its integration's 8 deliveries in flight")
	slices.Sort(lat)
	t.Logf("B's delivery latency during A's slow burst: p50 %s, p99 %s (max of %d); A: %d of 400 delivered, peak %d in flight",
		lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), len(lat), aDone, slow.peak.Load())
}

// TestWebhookSameURLCollapses: endpoints of one integration that share a URL get one delivery
// per event, logged under the oldest endpoint subscribed to it; an endpoint with another URL
// gets its own.
func TestWebhookSameURLCollapses(t *testing.T) {
	tn := newTenant(t)
	rcv, other := newReceiver(t), newReceiver(t)
	first := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL + "/hooks", "events": []string{"splat.updated"}})
	twin := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL + "/hooks", "events": []string{"splat.updated", "splat.created"}})
	apart := createWebhook(t, tn, map[string]any{"url": other.srv.URL + "/hooks", "events": []string{"splat.updated"}})
	id := commitScene(t, tn, "twins", 10)["id"].(string)
	for i := range 3 {
		r := do(t, "PATCH", "/api/v1/splats/"+id, tn.keys("twins"), map[string]any{"title": "T " + strconv.Itoa(i)})
		require.Equal(t, 200, r.Status, string(r.Raw))
	}
	require.Len(t, settled(t, tn, apart["id"].(string), other), 3)
	eventually(t, "the shared URL gets its events", func() bool { return len(rcv.all()) == 4 },
		func() string { return fmt.Sprint(len(rcv.all()), " received ", deliveryMark(tn.IntegrationID)) })
	firstLog := deliveries(t, tn, first["id"].(string))
	require.Len(t, firstLog, 3, "the oldest endpoint of the URL logs the updates: %v", firstLog)
	// The twin alone wants splat.created: it logs that one, and no update.
	twinLog := deliveries(t, tn, twin["id"].(string))
	require.Len(t, twinLog, 1, "%v", twinLog)
	require.Equal(t, "splat.created", twinLog[0]["type"])
	require.Equal(t, map[string]int{"splat.updated": 3, "splat.created": 1}, typesOf(rcv.all()), "one delivery per event at the shared URL")
}
