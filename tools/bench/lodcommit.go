package bench

import (
	"context"
	"fmt"
	"net/http"
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
	// lodCommitNeighbours is how many connections the other tenant reads from, one request in
	// flight each: a tenant in use, not a load test of its own.
	lodCommitNeighbours = 4
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
	lr.p50 = Row{Name: fmt.Sprintf("another tenant's GET /api/v1/external-user p50 during the %s-file commit (bare: alone)", largest), Unit: "ms"}
	lr.p99 = Row{Name: fmt.Sprintf("another tenant's GET /api/v1/external-user p99 during the %s-file commit (bare: alone)", largest), Unit: "ms"}
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
	load := LoadOptions{URL: st.State.GatewayURL + "/api/v1/external-user", Headers: other.Headers(), Concurrency: lodCommitNeighbours,
		MaxRequests: r.o.MaxRequests, Timeout: r.o.Timeout}
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
		var alone LoadResult
		if largest {
			if alone, err = RunLoad(ctx, withWindow(load, lodCommitNeighbourIdle)); err != nil {
				failRows(err, &lr.p50, &lr.p99)
			}
		}
		// The other tenant reads for as long as the bare copies took: the commit takes at
		// least that, so every read measured overlaps it.
		during := make(chan LoadResult, 1)
		var loadErr error
		if largest {
			go func() {
				res, err := RunLoad(ctx, withWindow(load, bare))
				loadErr = err
				during <- res
			}()
		}
		t0 = time.Now()
		id, err := callID(c.gw, http.MethodPost, "/api/v1/splats", c.h, up.commitBody(fmt.Sprintf("Bench LOD commit of %d files", n)), http.StatusCreated, "splatId")
		took := time.Since(t0)
		if err != nil {
			row.Err = fmt.Errorf("lod commit: %w", err)
		} else {
			row.Value, row.Bare = float64(took.Milliseconds()), float64(bare.Milliseconds())
			row.Notes = fmt.Sprintf("scene %s; commit %.1f s, bare copies %.1f s (%.0f files/s against %.0f)", id, took.Seconds(), bare.Seconds(),
				float64(n)/took.Seconds(), float64(n)/bare.Seconds())
			log.Info("LOD commit done", "files", n, "took", took.Round(time.Millisecond), "bare", bare.Round(time.Millisecond))
		}
		if largest {
			res := <-during
			if loadErr != nil {
				failRows(loadErr, &lr.p50, &lr.p99)
			} else if alone.OK > 0 {
				lr.p50.Value, lr.p50.Bare = ms(res.P50), ms(alone.P50)
				lr.p99.Value, lr.p99.Bare = ms(res.P99), ms(alone.P99)
				note := fmt.Sprintf("%d connections; during: %s, %d reads; alone: %s, %d reads", lodCommitNeighbours, res.Summary(), res.OK, alone.Summary(), alone.OK)
				lr.p50.Notes, lr.p99.Notes = note, note
			}
		}
	}
}

// withWindow is o measuring for d with no warm-up.
func withWindow(o LoadOptions, d time.Duration) LoadOptions {
	o.Warmup, o.Duration = 0, d
	return o
}
