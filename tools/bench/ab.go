package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/testenv"
)

// Side is one server of an A/B comparison: what to load and whose CPU time to count.
type Side struct {
	// Name labels the side in notes and logs ("gateway", "bare").
	Name string
	// Load is the side's load run.
	Load LoadOptions
	// PIDs are the server processes answering the side's requests; their CPU time per
	// request is reported. Postgres is counted apart (DBPID), shared by both sides.
	PIDs []int
	// DBPID is the Postgres postmaster, counted with its backends; 0 skips it.
	DBPID int
}

// SideResult is the median of one side's rounds.
type SideResult struct {
	LoadResult
	// RoundRPS are the rounds' rates in the order they ran.
	RoundRPS []float64
	// ServerCPU, DBCPU and ClientCPU are CPU time per successful request (warm-up included, the
	// median round's) of the side's server processes, of Postgres and of this load generator.
	ServerCPU, DBCPU, ClientCPU time.Duration
	// ClientShare is the fraction of the machine's CPUs the load generator used while loading.
	ClientShare float64
}

// CPUNote describes where the side's CPU went per request, for a row's notes.
func (s SideResult) CPUNote() string {
	return fmt.Sprintf("CPU/req server %s, postgres %s, client %s (client %.0f%% of the machine)",
		fmtMicros(s.ServerCPU), fmtMicros(s.DBCPU), fmtMicros(s.ClientCPU), 100*s.ClientShare)
}

func fmtMicros(d time.Duration) string {
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}

// RunAB measures a and b in rounds alternated A/B, B/A, A/B…, each run with its own warm-up, so
// that neither side always runs first (right after a start, while the machine's other tenants
// are busy) and a drift in the machine's load falls on both. Each side's result is its median
// round by rate, with the median p50 and p99 of its rounds; failures are summed over every round.
func RunAB(ctx context.Context, rounds int, a, b Side) (SideResult, SideResult, error) {
	if rounds < 1 {
		return SideResult{}, SideResult{}, errors.New("load: at least one round")
	}
	res := [2][]roundResult{}
	sides := [2]Side{a, b}
	for i := range rounds {
		for j := range 2 {
			k := (i + j) % 2 // A first in even rounds, B first in odd ones
			r, err := runRound(ctx, sides[k])
			if err != nil {
				return SideResult{}, SideResult{}, fmt.Errorf("%s, round %d: %w", sides[k].Name, i+1, err)
			}
			res[k] = append(res[k], r)
		}
	}
	return medianSide(res[0]), medianSide(res[1]), nil
}

// roundResult is one load run with the CPU time spent during it.
type roundResult struct {
	LoadResult
	server, db, client time.Duration
	wall               time.Duration
}

func runRound(ctx context.Context, s Side) (roundResult, error) {
	cpu := func() (server, db, client time.Duration) {
		for _, pid := range s.PIDs {
			server += processCPU(pid, false)
		}
		if s.DBPID > 0 {
			db = processCPU(s.DBPID, true)
		}
		return server, db, selfCPU()
	}
	s0, d0, c0 := cpu()
	t0 := time.Now()
	res, err := RunLoad(ctx, s.Load)
	wall := time.Since(t0)
	s1, d1, c1 := cpu()
	return roundResult{LoadResult: res, server: s1 - s0, db: d1 - d0, client: c1 - c0, wall: wall}, err
}

// medianSide merges rounds: the median round by rate gives the rate and the CPU figures, the
// medians of the rounds' percentiles give p50 and p99, and the counts are summed.
func medianSide(rounds []roundResult) SideResult {
	out := SideResult{LoadResult: LoadResult{Statuses: map[int]int64{}}}
	var p50s, p99s []time.Duration
	for _, r := range rounds {
		out.RoundRPS = append(out.RoundRPS, r.RPS)
		out.OK += r.OK
		out.Non200 += r.Non200
		out.Errors += r.Errors
		out.Accepted += r.Accepted
		out.Capped = out.Capped || r.Capped
		for code, n := range r.Statuses {
			out.Statuses[code] += n
		}
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
		p50s, p99s = append(p50s, r.P50), append(p99s, r.P99)
	}
	byRate := slices.Clone(rounds)
	slices.SortFunc(byRate, func(x, y roundResult) int { return cmp.Compare(x.RPS, y.RPS) })
	mid := byRate[len(byRate)/2]
	out.RPS, out.Window = mid.RPS, mid.Window
	slices.Sort(p50s)
	slices.Sort(p99s)
	out.P50, out.P99 = p50s[len(p50s)/2], p99s[len(p99s)/2]
	if mid.Accepted > 0 {
		n := time.Duration(mid.Accepted)
		out.ServerCPU, out.DBCPU, out.ClientCPU = mid.server/n, mid.db/n, mid.client/n
	}
	if mid.wall > 0 {
		out.ClientShare = mid.client.Seconds() / mid.wall.Seconds() / float64(runtime.NumCPU())
	}
	return out
}

// clockTick is the kernel's USER_HZ, the unit of /proc/PID/stat's CPU times (100 on Linux).
const clockTick = 10 * time.Millisecond

// processCPU is the user + system CPU time pid has used, with its descendants' when children is
// set (Postgres's backends); 0 when it cannot be read.
func processCPU(pid int, children bool) time.Duration {
	pids := []int{pid}
	if children {
		pids = append(pids, descendants(pid)...)
	}
	var total time.Duration
	for _, p := range pids {
		f, err := testenv.ProcStatFields(p)
		if err != nil || len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * clockTick
	}
	return total
}

// selfCPU is this process's user + system CPU time: the load generator's while it loads.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
