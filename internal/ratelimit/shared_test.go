package ratelimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// memBuckets is a Leaser in memory with PGBuckets' arithmetic, on a clock the test drives (the
// store's clock, as Postgres' is in production). PGBuckets itself is tested against Postgres by
// the e2e suite (TestRateLimitAcrossGateways).
type memBuckets struct {
	// delay is each lease's round trip (a loaded Postgres).
	delay   time.Duration
	mu      sync.Mutex
	tat     map[string]int64
	clock   *fakeClock
	leases  atomic.Int64
	failing atomic.Bool
}

// newMemBuckets is an empty store whose clock starts an hour in (every bucket full).
func newMemBuckets() *memBuckets {
	c := &fakeClock{}
	c.ns.Store(int64(time.Hour))
	return &memBuckets{tat: map[string]int64{}, clock: c}
}

func (m *memBuckets) Lease(_ context.Context, key string, n int, lim Limit) (Lease, error) {
	m.leases.Add(1)
	time.Sleep(m.delay)
	if m.failing.Load() {
		return Lease{}, errors.New("store down")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now, t, w := m.clock.ns.Load(), lim.interval(), int64(lim.Window)
	tat := max(m.tat[key], now)
	granted := min(int64(n), max((now+w-tat)/t, 0))
	m.tat[key] = tat + granted*t
	return Lease{Granted: int(granted), Ahead: time.Duration(m.tat[key] - now)}, nil
}

func (m *memBuckets) Return(_ context.Context, key string, n int, lim Limit) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tat[key] -= int64(n) * lim.interval()
	return nil
}

// replica is one gateway's Shared on the store, on the store's clock.
func replica(store *memBuckets) *Shared {
	s := NewShared(store, New[string](1000), slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.clock = store.clock.ns.Load
	return s
}

// settle waits until no lease of s is in flight, so that what it holds is final.
func (s *Shared) settle() {
	for i := range s.parts {
		p := &s.parts[i]
		for {
			p.mu.Lock()
			var done chan struct{}
			for _, h := range p.held {
				if h.fetching != nil {
					done = h.fetching
					break
				}
			}
			p.mu.Unlock()
			if done == nil {
				break
			}
			<-done
		}
	}
}

// drain takes key from the replicas in turn until every one refuses with nothing in flight,
// and returns how many each allowed.
func drain(key string, lim Limit, replicas ...*Shared) []int {
	allowed := make([]int, len(replicas))
	for {
		refused := 0
		for i, s := range replicas {
			if s.Take(key, lim).Allowed {
				allowed[i]++
			} else {
				s.settle()
				if !s.Take(key, lim).Allowed {
					refused++
				} else {
					allowed[i]++
				}
			}
		}
		if refused == len(replicas) {
			return allowed
		}
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

var plan = Limit{Quota: 200, Window: 10 * time.Second} // the free plan: one request every 50 ms

func TestSharedHoldsTheLimitAcrossReplicas(t *testing.T) {
	store := newMemBuckets()
	clock := store.clock
	a, b := replica(store), replica(store)
	got := drain("int", plan, a, b)
	require.Equal(t, plan.Quota, sum(got), "two replicas together allow one quota, not two: %v", got)
	require.Positive(t, got[0])
	require.Positive(t, got[1])

	// One replica alone gets the whole quota of another key.
	require.Equal(t, []int{plan.Quota}, drain("alone", plan, a))

	// A refused key costs no lease until a batch has refilled, however many requests come.
	before := store.leases.Load()
	for range 1000 {
		d := a.Take("int", plan)
		require.False(t, d.Allowed)
		require.Equal(t, 0, d.Remaining)
		require.Equal(t, time.Duration(batch(plan))*50*time.Millisecond, d.RetryAfter, "when a batch has refilled")
	}
	require.Equal(t, before, store.leases.Load(), "refusals are answered from memory")
	clock.advance(time.Duration(batch(plan)) * 50 * time.Millisecond)
	require.Equal(t, batch(plan), sum(drain("int", plan, a, b)), "the refill, once")
}

func TestSharedConcurrentReplicasNeverExceedTheQuota(t *testing.T) {
	store := newMemBuckets()
	replicas := []*Shared{replica(store), replica(store)}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		s := replicas[i%2]
		wg.Go(func() {
			for range 100 {
				if s.Take("int", plan).Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	for _, s := range replicas {
		s.settle()
	}
	// 3 200 requests at once: the quota exactly, less what a replica still holds unspent.
	held := 0
	for _, s := range replicas {
		held += s.holding("int")
	}
	require.LessOrEqual(t, held, 2*(batch(plan)*3/2+1), "at most a batch and a half a replica")
	require.Equal(t, int64(plan.Quota-held), allowed.Load())
}

// TestSharedServesABurstOnAnEmptyHand: 200 requests of one key arriving at once on a replica
// that holds nothing, the store slow to answer and the bucket holding room for all of them: every
// one is allowed (a burst once got 131 refusals, each waiter dropping out of the count the next
// lease asked for, so leases stayed a batch long and requests ran out of waits).
func TestSharedServesABurstOnAnEmptyHand(t *testing.T) {
	store := newMemBuckets()
	store.delay = 20 * time.Millisecond
	s := replica(store)
	lim := Limit{Quota: 1000, Window: time.Second}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if s.Take("burst", lim).Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 200, allowed.Load())
	require.Less(t, store.leases.Load(), int64(20), "the waiters share leases")
}

// holding is how many requests of key s holds unspent.
func (s *Shared) holding(key string) int {
	for i := range s.parts {
		p := &s.parts[i]
		p.mu.Lock()
		h := p.held[key]
		p.mu.Unlock()
		if h != nil {
			return h.tokens
		}
	}
	return 0
}

func TestSharedGivesBackWhatItDoesNotUse(t *testing.T) {
	store := newMemBuckets()
	clock := store.clock
	a, b := replica(store), replica(store)
	require.True(t, a.Take("int", plan).Allowed)
	a.settle()
	require.Positive(t, a.holding("int"), "a leases ahead")

	// Used a moment ago: kept. Idle for idleReturn: given back, so b gets all the rest.
	a.giveBack(int64(idleReturn))
	require.Positive(t, a.holding("int"))
	clock.advance(idleReturn)
	a.giveBack(int64(idleReturn))
	require.Zero(t, a.holding("int"))
	clock.advance(-idleReturn) // back to the instant of a's request, so nothing refilled
	require.Equal(t, []int{plan.Quota - 1}, drain("int", plan, b))
}

func TestSharedReplicaThatDiesLosesOnlyWhatItHeld(t *testing.T) {
	store := newMemBuckets()
	clock := store.clock
	dead, b := replica(store), replica(store)
	require.True(t, dead.Take("int", plan).Allowed)
	dead.settle()
	lost := dead.holding("int")
	require.LessOrEqual(t, lost, batch(plan)*3/2+1)
	// dead never gives back: what it held is gone, and refills like any spent request.
	require.Equal(t, []int{plan.Quota - 1 - lost}, drain("int", plan, b))
	clock.advance(time.Duration(lost+batch(plan)) * 50 * time.Millisecond)
	require.Equal(t, lost+batch(plan), sum(drain("int", plan, b)))
}

func TestSharedFallsBackToItsOwnLimitWhenTheStoreFails(t *testing.T) {
	store := newMemBuckets()
	clock := store.clock
	a := replica(store)
	withClock(a.local).ns.Store(clock.ns.Load())
	store.failing.Store(true)
	// The first request finds the store down: it and the next second are the local limiter's.
	require.True(t, a.Take("int", plan).Allowed)
	leases := store.leases.Load()
	require.Equal(t, []int{plan.Quota - 1}, drain("int", plan, a), "the local bucket, less the first request")
	require.Equal(t, leases, store.leases.Load(), "no lease while the store counts as failed")
	store.failing.Store(false)
	clock.advance(failBackoff)
	require.True(t, a.Take("int", plan).Allowed, "the store again, whose bucket is full")
	require.Greater(t, store.leases.Load(), leases)
}
