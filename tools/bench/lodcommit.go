package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/splathost/splathost/internal/testenv"
)

// Shape of the LOD commit measure.
var (
	// lodCommitSizes are the committed folders' file counts: a common folder and the spec's
	// largest (20 000 files).
	lodCommitSizes = []int{2_000, 20_000}
)

const (
	// lodCommitBareConcurrency is the bare copy pool's size: the product's seal slots
	// (services/scene sealSlots), so both sides have as many copies in flight.
	lodCommitBareConcurrency = 8
	// lodCommitNeighbourEvery paces the other tenant's reads: a tenant in use, not a load test
	// of its own (a closed loop at loopback speed would take a core from the commit it watches).
	lodCommitNeighbourEvery = 20 * time.Millisecond
	// lodCommitNeighbourIdle is how long the other tenant's reads are measured alone.
	lodCommitNeighbourIdle = 5 * time.Second
)

// GoalLODCommit caps a LOD commit's wall time over the bare copy pool's for the same files:
// the commit lists the folder once, copies each file once and sniffs two.
var GoalLODCommit = &Goal{Target: 1.5, Unit: "× bare"}

// lodCommitRows are the LOD commit measure's rows: one commit time per folder size, then the
// other tenant's read latency during the largest commit.
type lodCommitRows struct {
	commits  []Row
	p50, p99 Row
}

func newLODCommitRows() *lodCommitRows {
	lr := &lodCommitRows{}
	for _, n := range lodCommitSizes {
		lr.commits = append(lr.commits, Row{Name: fmt.Sprintf("POST /api/v1/splats, a %s-file LOD folder (bare: as many raw CopyObject, %d at a time), allinone",
			thousands(n), lodCommitBareConcurrency), Unit: "ms", Goal: GoalLODCommit})
	}
	largest := thousands(lodCommitSizes[len(lodCommitSizes)-1])
	lr.p50 = Row{Name: fmt.Sprintf("another tenant's GET /api/v1/external-user p50 during the %s-file commit (bare: alone)", largest), Unit: "µs"}
	lr.p99 = Row{Name: fmt.Sprintf("another tenant's GET /api/v1/external-user p99 during the %s-file commit (bare: alone)", largest), Unit: "µs"}
	return lr
}

func (lr *lodCommitRows) all() []*Row {
	out := []*Row{}
	for i := range lr.commits {
		out = append(out, &lr.commits[i])
	}
	return append(out, &lr.p50, &lr.p99)
}

// thousands writes n with a thin space between thousands, as the docs do (20 000).
func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// lodCommitPhase starts an all-in-one stack and runs the LOD commit measure on it alone.
func (r *runner) lodCommitPhase(ctx context.Context, ready *Row, lr *lodCommitRows) {
	if !r.phase(ctx, "allinone", ready, func(st *testenv.Stack) {
		r.withTenant(st, "lodcommit", func(t Tenant) { r.lodCommits(ctx, st, t, lr) }, lr.all()...)
	}) {
		failRows(ready.Err, lr.all()...)
	}
}

// lodCommits measures commits of LOD folders of each size of lodCommitSizes against a bare
// pool of raw CopyObject calls over the same uploaded files (what sealing must do at least),
// one after the other in the same stack; and another tenant's reads while the largest commit
// runs against the same reads alone. The uploads are not timed.
func (r *runner) lodCommits(ctx context.Context, st *testenv.Stack, t Tenant, lr *lodCommitRows) {
	log := r.o.Log
	c, err := r.storeCustomer(st, t, "bench-lod-committer")
	if err != nil {
		failRows(fmt.Errorf("lod commit setup: %w", err), lr.all()...)
		return
	}
	defer c.cleanup()
	other, err := SetupTenant(st.State.GatewayURL, st.State.AdminToken, "lodcommit-neighbour")
	if err != nil {
		failRows(fmt.Errorf("other tenant setup: %w", err), lr.all()...)
		return
	}
	reads := st.State.GatewayURL + "/api/v1/external-user"
	for i, n := range lodCommitSizes {
		row := &lr.commits[i]
		log.Info("uploading a LOD folder to commit", "files", n)
		up, err := c.uploadLOD(ctx, n)
		if err != nil {
			row.Err = err
			continue
		}
		dst := fmt.Sprintf("%slodcommit-%d/", c.scratch(), n)
		t0 := time.Now()
		err = forEach(len(up.keys), lodCommitBareConcurrency, func(j int) error {
			return c.copyRaw(ctx, up.keys[j], dst+strings.TrimPrefix(up.keys[j], up.folderKey+"/"))
		})
		bare := time.Since(t0)
		if err != nil {
			row.Err = fmt.Errorf("bare copy: %w", err)
			continue
		}
		largest := i == len(lodCommitSizes)-1
		var alone, during neighbourReads
		if largest {
			stop := make(chan struct{})
			time.AfterFunc(lodCommitNeighbourIdle, func() { close(stop) })
			alone = paceReads(ctx, reads, other.Headers(), stop)
		}
		// The other tenant reads from the commit's start to its answer.
		stop, done := make(chan struct{}), make(chan neighbourReads, 1)
		if largest {
			go func() { done <- paceReads(ctx, reads, other.Headers(), stop) }()
		}
		t0 = time.Now()
		id, err := callID(c.gw, http.MethodPost, "/api/v1/splats", c.h, up.commitBody(fmt.Sprintf("Bench LOD commit of %d files", n)), http.StatusCreated, "splatId")
		took := time.Since(t0)
		close(stop)
		if err != nil {
			row.Err = fmt.Errorf("lod commit: %w", err)
		} else {
			row.Value, row.Bare = float64(took.Milliseconds()), float64(bare.Milliseconds())
			row.Notes = fmt.Sprintf("scene %s; commit %.1f s, bare copies %.1f s (%.0f files/s against %.0f)", id, took.Seconds(), bare.Seconds(),
				float64(n)/took.Seconds(), float64(n)/bare.Seconds())
			log.Info("LOD commit done", "files", n, "took", took.Round(time.Millisecond), "bare", bare.Round(time.Millisecond))
		}
		if !largest {
			continue
		}
		during = <-done
		if len(during.lat) == 0 || len(alone.lat) == 0 {
			failRows(fmt.Errorf("no successful reads of the other tenant (%d and %d failed)", during.failed, alone.failed), &lr.p50, &lr.p99)
			continue
		}
		lr.p50.Value, lr.p50.Bare = us(during.pct(50)), us(alone.pct(50))
		lr.p99.Value, lr.p99.Bare = us(during.pct(99)), us(alone.pct(99))
		note := fmt.Sprintf("one read every %v; during the commit %d reads (%d failed), alone %d (%d failed) over %v",
			lodCommitNeighbourEvery, len(during.lat), during.failed, len(alone.lat), alone.failed, lodCommitNeighbourIdle)
		lr.p50.Notes, lr.p99.Notes = note, note
	}
}

// neighbourReads are the other tenant's paced reads: each success's latency, and the failures.
type neighbourReads struct {
	lat    []time.Duration
	failed int
}

// pct is the p-th percentile of the latencies (nearest rank).
func (n neighbourReads) pct(p int) time.Duration {
	lat := slices.Clone(n.lat)
	slices.Sort(lat)
	return lat[min(len(lat)-1, len(lat)*p/100)]
}

// paceReads GETs url with headers h every lodCommitNeighbourEvery until stop closes.
func paceReads(ctx context.Context, url string, h map[string]string, stop <-chan struct{}) neighbourReads {
	var out neighbourReads
	tick := time.NewTicker(lodCommitNeighbourEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return out
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		t0 := time.Now()
		resp, err := testenv.Do(url, http.MethodGet, "", h, nil)
		if err != nil || resp.Status != http.StatusOK {
			out.failed++
			continue
		}
		out.lat = append(out.lat, time.Since(t0))
	}
}

// us is d in microseconds, fractions kept.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
