//go:build e2e

package e2e

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/events"
)

// TestChaosWebhookOrder (issue 27, point 4) keeps the receiver down (503) while many scenes are
// each created, PATCHed by three racing requests and deleted, then brings it up. The deliveries
// arrive in whatever order their retries take; the promise is that each scene's sequences,
// sorted, agree with what happened: created first, deleted last, and the update with the
// highest sequence is the one whose title the API showed after the race (the one committed
// last). Figures: contradictions 0, events with no sequence 0, repeated numbers 0, every event
// delivered; the inversions in arrival order show the reordering the sequence undoes.
func TestChaosWebhookOrder(t *testing.T) {
	rep := newChaosReport(t, "webhook order after a receiver outage")
	// Enterprise: its rate limit leaves the burst of commits, racing PATCHes and log reads whole.
	tn := newIntegration(t, newAccount(t, "enterprise", 1<<30), nil)
	rcv := newReceiver(t)
	rcv.status.Store(503)
	w := createWebhook(t, tn, map[string]any{"url": rcv.srv.URL,
		"events": []string{events.SplatCreated, events.SplatUpdated, events.SplatDeleted}})
	n := chaosScale("SPLATHOST_CHAOS_WEBHOOK_ORDER", 4, 60)
	const racers = 3
	outage := time.Duration(chaosScale("SPLATHOST_CHAOS_WEBHOOK_OUTAGE_S", 5, 20)) * time.Second

	// shown is each scene's title as GET answered after its racing PATCHes.
	shown := make(map[string]string, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range work {
				eu := "order" + strconv.Itoa(i%3)
				id := commitScene(t, tn, eu, 10)["id"].(string)
				var race sync.WaitGroup
				for k := range racers {
					race.Go(func() {
						r := do(t, "PATCH", "/api/v1/splats/"+id, tn.keys(eu), map[string]any{"title": "race-" + strconv.Itoa(k)})
						require.Equal(t, 200, r.Status, string(r.Raw))
					})
				}
				race.Wait()
				r := do(t, "GET", "/api/v1/splats/"+id, tn.keys(eu), nil)
				require.Equal(t, 200, r.Status, string(r.Raw))
				title := splatOf(r)["title"].(string)
				r = do(t, "DELETE", "/api/v1/splats/"+id, tn.keys(eu), nil)
				require.Equal(t, 200, r.Status, string(r.Raw))
				mu.Lock()
				shown[id] = title
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	time.Sleep(outage)
	rcv.status.Store(200)
	want := n * (racers + 2)
	// Waiting on the receiver, not the log: reading a log of hundreds of rows four times a
	// second is traffic of its own.
	require.Eventually(t, func() bool { return len(rcv.ids()) >= want }, 5*time.Minute, time.Second,
		"every event arrives once the receiver is up")
	settled(t, tn, w["id"].(string), rcv)

	got := bySplat(rcv.all())
	var delivered, unsequenced, repeated, contradictions, inverted, pairs int
	numbers := map[int64]bool{}
	for id, title := range shown {
		arrived := got[id]
		delivered += len(arrived)
		inverted += inversions(arrived)
		pairs += len(arrived) * (len(arrived) - 1) / 2
		for _, e := range arrived {
			if e.Sequence <= 0 {
				unsequenced++
			} else if numbers[e.Sequence] {
				repeated++
			}
			numbers[e.Sequence] = true
		}
		ordered := bySequence(arrived)
		if len(ordered) != racers+2 || ordered[0].Type != events.SplatCreated ||
			ordered[len(ordered)-1].Type != events.SplatDeleted || ordered[len(ordered)-2].Title != title {
			contradictions++
			var seen []string
			for _, e := range ordered {
				seen = append(seen, e.Type+"#"+strconv.FormatInt(e.Sequence, 10)+" "+e.Title)
			}
			rep.note("scene %s (shown %q): %v", id, title, seen)
		}
	}
	rep.info("scenes", float64(n))
	rep.info("outage seconds", outage.Seconds())
	rep.equal("events delivered", float64(delivered), float64(want))
	rep.info("event pairs of one scene that arrived out of order", float64(inverted))
	rep.info("event pairs of one scene", float64(pairs))
	rep.zero("events without a sequence", float64(unsequenced))
	rep.zero("sequence numbers given twice", float64(repeated))
	rep.zero("scenes whose sequence order contradicts what happened", float64(contradictions))
	rep.check()
}
