package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

// A side's result is its median round by rate, with the medians of the rounds' percentiles and
// the sums of their counts: one round disturbed by the machine's other work moves nothing.
func TestMedianSide(t *testing.T) {
	round := func(rps float64, p50, p99 time.Duration, ok, failed int64, cpu time.Duration) roundResult {
		return roundResult{LoadResult: LoadResult{RPS: rps, P50: p50, P99: p99, OK: ok, Non200: failed, Accepted: ok,
			Statuses: map[int]int64{500: failed}}, server: cpu, wall: time.Second}
	}
	got := medianSide([]roundResult{
		round(1000, 9*time.Millisecond, 90*time.Millisecond, 5000, 1, 100*time.Millisecond),
		round(3000, 3*time.Millisecond, 30*time.Millisecond, 15000, 0, 300*time.Millisecond),
		round(2000, 5*time.Millisecond, 20*time.Millisecond, 10000, 2, 400*time.Millisecond),
	})
	if got.RPS != 2000 || got.P50 != 5*time.Millisecond || got.P99 != 30*time.Millisecond {
		t.Fatalf("median: rps %v p50 %v p99 %v", got.RPS, got.P50, got.P99)
	}
	if got.OK != 30000 || got.Non200 != 3 || got.Statuses[500] != 3 {
		t.Fatalf("sums: ok %d non200 %d statuses %v", got.OK, got.Non200, got.Statuses)
	}
	if want := 400 * time.Millisecond / 10000; got.ServerCPU != want {
		t.Fatalf("CPU per request of the median round: %v, want %v", got.ServerCPU, want)
	}
	if len(got.RoundRPS) != 3 || got.RoundRPS[0] != 1000 {
		t.Fatalf("round rates in run order: %v", got.RoundRPS)
	}
}

// RunAB alternates the sides: A then B in the first round, B then A in the second.
func TestRunABAlternates(t *testing.T) {
	var mu sync.Mutex
	var order []string
	server := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			if len(order) == 0 || order[len(order)-1] != name {
				order = append(order, name)
			}
			mu.Unlock()
		}))
	}
	a, b := server("a"), server("b")
	defer a.Close()
	defer b.Close()
	opts := func(url string) LoadOptions {
		return LoadOptions{URL: url, Concurrency: 2, Duration: 100 * time.Millisecond, MaxRequests: 1_000_000, Timeout: time.Second}
	}
	ra, rb, err := RunAB(context.Background(), 3, Side{Name: "a", Load: opts(a.URL), PIDs: []int{os.Getpid()}},
		Side{Name: "b", Load: opts(b.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "a", "b"}; len(order) != 4 || order[0] != "a" || order[1] != "b" || order[2] != "a" || order[3] != "b" {
		// a b | b a | a b collapses to a b a b once consecutive runs of one side are merged.
		t.Fatalf("run order %v, want %v", order, want)
	}
	if ra.OK == 0 || rb.OK == 0 || len(ra.RoundRPS) != 3 || len(rb.RoundRPS) != 3 {
		t.Fatalf("results: a %+v b %+v", ra, rb)
	}
	if ra.ServerCPU <= 0 {
		t.Fatalf("CPU per request of this process not read: %v", ra.ServerCPU)
	}
}
