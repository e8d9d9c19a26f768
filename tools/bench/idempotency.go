package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/testenv"
)

// Shape of the idempotent-commit measure (issue 15): the same commit, with and without an
// Idempotency-Key, from idemClients keep-alive connections, in idemRounds alternated rounds of
// idemCommits each.
const (
	idemClients = 32
	idemRounds  = 4
	idemCommits = 160
)

// idemCommitRows measures what an Idempotency-Key costs a commit: the keyed commits' rate
// against the plain commits' (the bare limit of the row), both sides' p50 and p99 in the notes.
// Every commit is a first request (a fresh key each): the cost measured is the key's claim and
// the stored answer, not a replay.
func (r *runner) idemCommitRows(ctx context.Context, st *testenv.Stack, t Tenant, row *Row) {
	gw := st.State.GatewayURL
	eu := "bench-idempotent"
	if _, err := call(gw, http.MethodPut, "/api/v1/external-user", t.HeadersFor(eu), map[string]any{}, http.StatusOK); err != nil {
		row.Err = err
		return
	}
	file := fixtures.Splat(commitSplats)
	n := 2 * idemRounds * idemCommits
	urls := make([]string, n)
	r.o.Log.Info("idempotent commits: uploading", "files", n)
	if err := forEach(n, uploadWorkers, func(i int) (err error) {
		urls[i], err = t.UploadSplat(gw, eu, file)
		return err
	}); err != nil {
		row.Err = fmt.Errorf("uploads before the commits: %w", err)
		return
	}
	var keyed, plain []time.Duration
	var keyedWall, plainWall time.Duration
	for round := range 2 * idemRounds {
		withKey := round%2 == 0
		batch := urls[round*idemCommits : (round+1)*idemCommits]
		lat, wall, err := commitBatch(ctx, gw, t.HeadersFor(eu), batch, withKey)
		if err != nil {
			row.Err = err
			return
		}
		if withKey {
			keyed, keyedWall = append(keyed, lat...), keyedWall+wall
		} else {
			plain, plainWall = append(plain, lat...), plainWall+wall
		}
	}
	slices.Sort(keyed)
	slices.Sort(plain)
	pct := func(d []time.Duration, p int) string { return fmtLatency(d[len(d)*p/100]) }
	row.Value = float64(len(keyed)) / keyedWall.Seconds()
	row.Bare = float64(len(plain)) / plainWall.Seconds()
	row.Notes = fmt.Sprintf("%d commits a side in %d alternated rounds, %d connections; with a key p50 %s p99 %s, without p50 %s p99 %s",
		len(keyed), idemRounds, idemClients, pct(keyed, 50), pct(keyed, 99), pct(plain, 50), pct(plain, 99))
}

// commitBatch commits every upload of urls from idemClients connections, each with a fresh
// Idempotency-Key when withKey; it returns each commit's latency and the batch's wall time.
func commitBatch(ctx context.Context, gw string, headers map[string]string, urls []string, withKey bool) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, len(urls))
	errs := make([]error, len(urls))
	next := make(chan int, len(urls))
	for i := range urls {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range idemClients {
		wg.Go(func() {
			for i := range next {
				h := headers
				if withKey {
					h = maps.Clone(headers)
					h["Idempotency-Key"] = "bench-" + ids.New()
				}
				status, took, err := postCommit(ctx, gw, h, fmt.Sprintf("idempotent %d", i), urls[i])
				lat[i], errs[i] = took, err
				if err == nil && status != http.StatusCreated {
					errs[i] = fmt.Errorf("commit %d: status %d", i, status)
				}
			}
		})
	}
	wg.Wait()
	return lat, time.Since(t0), errors.Join(errs...)
}
