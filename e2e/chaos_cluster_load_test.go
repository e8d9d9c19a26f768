//go:build e2e && chaos

package e2e

// The load of the cluster fault table (chaos_cluster_test.go) beyond engineLoad's clients: each
// row's view beacons and the clones.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ackedIDs is a copy of the acknowledged commits' ids so far.
func (l *engineLoad) ackedIDs() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]bool, len(l.acked))
	for id := range l.acked {
		out[id] = true
	}
	return out
}

// ackedSince lists the commits acknowledged since the snapshot before (ackedIDs).
func (l *engineLoad) ackedSince(before map[string]bool) []string {
	var out []string
	for id := range l.ackedIDs() {
		if !before[id] {
			out = append(out, id)
		}
	}
	return out
}

// views sends the row's beacons, one visitor each, paced over spread by 8 senders, each
// retried until accepted; the returned wait blocks until every beacon is settled.
func (c *clusterChaos) views(row *clusterRow, tok string, spread time.Duration) (wait func()) {
	work := make(chan int)
	var accepted, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if beaconUntilAccepted(c.beaconClient, c.l.base, tok, row.scene, fmt.Sprintf("v-%05d", i), &row.retries, &row.ambiguous) {
					accepted.Add(1)
				} else {
					gaveUp.Add(1)
				}
			}
		})
	}
	go func() {
		defer close(work)
		pace := spread / time.Duration(c.beacons)
		for i := range c.beacons {
			work <- i
			time.Sleep(pace)
		}
	}()
	return func() {
		wg.Wait()
		row.accepted, row.gaveUp = accepted.Load(), gaveUp.Load()
	}
}

// cloners is how many customers clone at once: a customer runs one clone job at a time, and
// a job slowed by a fault must not hold back the clones of the rows after it.
const cloners = 3

// cloner clones a scene of each cloner customer (never deleted) in turn until stop, every other
// clone as a job (Prefer: respond-async, a workflow on the split's workers), a customer's next
// only once its last job closed, keeping every clone that was started for the audit.
func (c *clusterChaos) cloner(stop <-chan struct{}) {
	srcs, open := make([]string, cloners), make([]*clusterClone, cloners)
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-time.After(300 * time.Millisecond):
		}
		k := n % cloners
		eu := fmt.Sprintf("cloner-%d", k)
		if srcs[k] == "" {
			srcs[k] = c.l.commit(eu, false)
			continue
		}
		if open[k] != nil && !c.cloneClosed(open[k]) {
			continue
		}
		open[k] = nil
		h := c.l.tn.keys(eu)
		if (n/cloners)%2 == 0 {
			h["Prefer"] = "respond-async"
		}
		t0 := time.Now()
		r := c.l.send("POST", clonePath(srcs[k]), h, nil)
		if r == nil || (r.Status != 201 && r.Status != 202) {
			continue
		}
		cl := &clusterClone{row: int(c.row.Load()), src: srcs[k], eu: eu, done: r.Status == 201, started: t0}
		if cl.done {
			cl.closed = time.Now()
		} else {
			cl.job, _ = r.Body["jobId"].(string)
			open[k] = cl
		}
		c.mu.Lock()
		c.clones = append(c.clones, cl)
		c.mu.Unlock()
	}
}

// cloneClosed polls a clone job once (not tallied with the load's answers: a poll is not a
// request the fault could fail twice): true once it closed, done when with success.
func (c *clusterChaos) cloneClosed(cl *clusterClone) bool {
	r, err := chaosDo(c.l.base, "GET", clonePath(cl.src)+"/"+cl.job, c.l.tn.keys(cl.eu), nil)
	if err != nil || r.Status != 200 || r.Body["status"] == "running" {
		return false
	}
	c.mu.Lock()
	cl.done, cl.closed = r.Body["status"] == "success", time.Now()
	c.mu.Unlock()
	return true
}
