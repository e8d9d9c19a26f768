package ratelimit

import (
	"context"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Leaser holds buckets that several processes draw from (the gateway replicas): PGBuckets keeps
// them in Postgres. A bucket is the same GCRA as Limiter's, one TAT per key, on the store's clock.
type Leaser interface {
	// Lease takes up to n requests from key's bucket under lim (fewer when fewer are left) and
	// says how many it took and where the bucket stands after it.
	Lease(ctx context.Context, key string, n int, lim Limit) (Lease, error)
	// Return gives back n requests leased under lim that were not used.
	Return(ctx context.Context, key string, n int, lim Limit) error
}

// Lease is a Leaser's answer.
type Lease struct {
	// Granted is how many requests the lease took (0..n).
	Granted int
	// Ahead is how far the bucket's TAT lies ahead of the store's now after the lease: how long
	// until it is full again (0 when it is full).
	Ahead time.Duration
}

// Shared limits keys (integrations) by buckets that every replica of a service draws from, so
// that N replicas together allow one limit, not N (docs/security.md, "Rate limits"). The hot
// path never waits on the store: a replica leases a batch of requests (batch: 1 % of the quota)
// and spends it from memory, leasing the next batch in the background when half of this one is
// spent. A request waits for a round trip only when its replica holds nothing for its key (the
// key's first request, or the batches running out faster than one round trip). A bucket the
// store found empty is remembered, so refusals cost no round trip either: the replica asks again
// once a batch has refilled.
//
// The error bound: the store never grants more than the bucket holds, so the replicas together
// never exceed the limit. What they can fall short by is what they hold and have not spent: at
// most 1.5 batches a replica (1.5 % of the quota). Held requests unused for idleReturn go back to
// the store (Run), and so do all of them when Run ends; a replica that dies loses what it held,
// which its bucket refills in 1.5 % of the window.
//
// When the store fails, the replica falls back to its own Limiter (each replica its own limit,
// as before the shared store) for failBackoff, and then tries the store again.
type Shared struct {
	leaser Leaser
	// local is the fallback while the store fails.
	local *Limiter[string]
	log   *slog.Logger
	seed  maphash.Seed
	// parts are the held batches, by key, sharded like Limiter's buckets.
	parts [shards]heldShard
	// failedUntil is the clock's time until which the store is not asked (after a failure).
	failedUntil atomic.Int64
	base        time.Time
	clock       func() int64
}

// heldShard is one locked part of a Shared.
type heldShard struct {
	mu   sync.Mutex
	held map[string]*held
	_    [40]byte
}

// held is what one replica holds of one key's bucket.
type held struct {
	// tokens are requests leased and not yet spent, under lim.
	tokens int
	lim    Limit
	// tat is when the shared bucket is full again (this process's clock), as of the last lease.
	tat int64
	// emptyUntil: the last lease found the bucket (nearly) empty; no lease before this time.
	emptyUntil int64
	// lastUsed is when a request of the key last came.
	lastUsed int64
	// fetching is closed when the lease in flight ends; nil when none is.
	fetching chan struct{}
	// waiting counts requests waiting for that lease, which the next lease asks for too.
	waiting int
}

const (
	// leaseTimeout bounds a lease's round trip; past it the store counts as failed.
	leaseTimeout = time.Second
	// failBackoff is how long a replica limits alone after a failed lease.
	failBackoff = time.Second
	// idleReturn is how long held requests of a key stay unused before they go back.
	idleReturn = time.Second
)

// NewShared returns a limiter drawing from leaser, with local as its fallback (a Limiter kept for
// the same keys).
func NewShared(leaser Leaser, local *Limiter[string], log *slog.Logger) *Shared {
	s := &Shared{leaser: leaser, local: local, log: log, seed: maphash.MakeSeed(), base: time.Now()}
	s.clock = func() int64 { return int64(time.Since(s.base)) }
	for i := range s.parts {
		s.parts[i].held = make(map[string]*held)
	}
	return s
}

// batch is how many requests a replica leases at once under lim: 1 % of the quota, at least one.
func batch(lim Limit) int { return max(1, (lim.Quota+99)/100) }

// Take charges one request to key if its shared bucket has room under lim.
func (s *Shared) Take(key string, lim Limit) Decision {
	if lim.Off() {
		return Decision{Allowed: true, Remaining: max(lim.Quota, 0)}
	}
	p := &s.parts[maphash.String(s.seed, key)&(shards-1)]
	p.mu.Lock()
	// A request that waits stays counted in h.waiting until it is answered, so every lease
	// started meanwhile asks for all who still wait: a burst on an empty hand is served by the
	// first lease or the next, never refused while the bucket has room.
	var waitingOn *held
	answer := func(d Decision) Decision {
		if waitingOn != nil {
			waitingOn.waiting--
		}
		p.mu.Unlock()
		return d
	}
	// The loop ends: each lease either grants what the waiters asked for or finds the bucket
	// short and sets emptyUntil, which answers the rest.
	for {
		now := s.clock()
		if now < s.failedUntil.Load() {
			answer(Decision{})
			return s.local.Take(key, lim)
		}
		h := p.held[key]
		if h == nil {
			h = &held{lim: lim}
			p.held[key] = h
		}
		h.lastUsed = now
		if h.tokens > 0 {
			h.tokens--
			if h.tokens*2 <= batch(lim) && h.fetching == nil && now >= h.emptyUntil {
				s.lease(p, key, h, lim, batch(lim)+h.waiting)
			}
			return answer(h.decision(now, lim))
		}
		if now < h.emptyUntil {
			retry := max(h.emptyUntil-now, lim.interval())
			d := h.decision(now, lim)
			d.Allowed, d.Remaining, d.RetryAfter = false, 0, time.Duration(retry)
			return answer(d)
		}
		if waitingOn != h {
			if waitingOn != nil {
				waitingOn.waiting--
			}
			h.waiting++
			waitingOn = h
		}
		if h.fetching == nil {
			s.lease(p, key, h, lim, batch(lim)+h.waiting)
		}
		done := h.fetching
		p.mu.Unlock()
		<-done
		p.mu.Lock()
	}
}

// decision is the answer of an allowed request: what the replica holds plus what the shared
// bucket had left at the last lease.
func (h *held) decision(now int64, lim Limit) Decision {
	t, w := lim.interval(), int64(lim.Window)
	ahead := max(h.tat-now, 0)
	left := min(int64(h.tokens)+max((w-ahead)/t, 0), int64(lim.Quota))
	return Decision{Allowed: true, Remaining: int(left), Reset: time.Duration(ahead)}
}

// lease starts a lease of n requests of key in the background; h.fetching is closed when it
// ends. Called with p locked.
func (s *Shared) lease(p *heldShard, key string, h *held, lim Limit, n int) {
	n = min(n, lim.Quota)
	done := make(chan struct{})
	h.fetching = done
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
		l, err := s.leaser.Lease(ctx, key, n, lim)
		cancel()
		now := s.clock()
		p.mu.Lock()
		defer p.mu.Unlock()
		h.fetching = nil
		if err != nil {
			if s.failedUntil.Swap(now+int64(failBackoff)) < now {
				s.log.Warn("rate limit store failed: each gateway limits alone for a while", "err", err, "for", failBackoff)
			}
			return
		}
		h.tokens += l.Granted
		h.lim = lim
		h.tat = now + int64(l.Ahead)
		if l.Granted < n {
			// The bucket is empty, or nearly: ask again when a whole batch has refilled, not
			// at every request, so a key refused at full speed costs a lease per batch.
			h.emptyUntil = h.tat - int64(lim.Window) + int64(batch(lim))*lim.interval()
		}
	}()
}

// Run gives back what a key's requests left unused for idleReturn, every idleReturn, and
// everything held when ctx ends. The gateway runs it for its lifetime.
func (s *Shared) Run(ctx context.Context) {
	tick := time.NewTicker(idleReturn)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.giveBack(0)
			return
		case <-tick.C:
			s.giveBack(int64(idleReturn))
		}
	}
}

// giveBack returns the requests held for keys idle for at least idle and forgets those keys.
func (s *Shared) giveBack(idle int64) {
	type unused struct {
		key string
		n   int
		lim Limit
	}
	var back []unused
	now := s.clock()
	for i := range s.parts {
		p := &s.parts[i]
		p.mu.Lock()
		for k, h := range p.held {
			if h.fetching != nil || h.waiting > 0 || now-h.lastUsed < idle {
				continue
			}
			if h.tokens > 0 {
				back = append(back, unused{k, h.tokens, h.lim})
			}
			delete(p.held, k)
		}
		p.mu.Unlock()
	}
	for _, u := range back {
		ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
		if err := s.leaser.Return(ctx, u.key, u.n, u.lim); err != nil {
			s.log.Warn("rate limit store: unused requests not given back", "err", err, "n", u.n)
		}
		cancel()
	}
}
