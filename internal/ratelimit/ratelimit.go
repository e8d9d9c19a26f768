// Package ratelimit is splathost's request rate limiter: the generic cell rate algorithm (GCRA,
// the token bucket written as one timestamp per key), sharded over many mutexes so that
// concurrent requests of different keys rarely meet, with a bounded number of keys per limiter.
//
// A Limit is "Quota requests per Window": a client may send Quota requests at once, and one more
// every Window/Quota after that (the bucket refills continuously, not at window boundaries).
// That is also what the IETF RateLimit-Policy field says of it (q and w; headers.go).
//
// State is one "theoretical arrival time" (TAT) per key: the moment the key's bucket is full
// again. A key whose TAT has passed is indistinguishable from one never seen, so forgetting it
// loses nothing; when a shard is full, the key to forget is chosen among a few sampled ones, the
// one nearest to full, so a flood of new keys cannot wipe the state of a key that is being
// limited. Memory is bounded by the key budget given to New, whatever callers send.
package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// Limit is Quota requests per Window. The zero Limit (Quota 0) is off: everything is allowed.
type Limit struct {
	Quota  int
	Window time.Duration
}

// Off reports whether the limit lets everything through.
func (l Limit) Off() bool { return l.Quota <= 0 || l.Window <= 0 }

// interval is the time one request costs (the emission interval, Window/Quota), at least 1 ns.
func (l Limit) interval() int64 { return max(int64(l.Window)/int64(l.Quota), 1) }

// Decision is a limiter's answer for one key, after the call's own charge (if any).
type Decision struct {
	// Allowed says the request fits the limit.
	Allowed bool
	// Remaining is how many more requests would be allowed right now (0..Quota).
	Remaining int
	// Reset is how long until the key's bucket is full again (Remaining = Quota).
	Reset time.Duration
	// RetryAfter, when not Allowed, is how long until one request is allowed again.
	RetryAfter time.Duration
}

// shards is the number of independently locked parts of a Limiter (a power of two). 64 keeps
// two requests of different keys on different locks almost always at the gateway's concurrency.
const shards = 64

// sample is how many entries a full shard looks at to pick the one it forgets.
const sample = 8

// shard is one locked part of a limiter; the padding keeps two shards' locks off one cache line.
type shard[K comparable] struct {
	mu  sync.Mutex
	tat map[K]int64
	_   [40]byte
}

// Limiter limits requests per key K (an integration id, a session, a client address). It is safe
// for concurrent use. The limit is given on every call, so one limiter serves keys of different
// limits (the plans of integrations) and a limit changed at run time applies at once.
type Limiter[K comparable] struct {
	seed     maphash.Seed
	perShard int
	shards   [shards]shard[K]
	// base and clock give the monotonic time in nanoseconds; clock is replaced by tests.
	base  time.Time
	clock func() int64
}

// New returns a limiter that keeps at most about maxKeys keys (at least one per shard).
func New[K comparable](maxKeys int) *Limiter[K] {
	l := &Limiter[K]{seed: maphash.MakeSeed(), perShard: max(maxKeys/shards, 1), base: time.Now()}
	l.clock = func() int64 { return int64(time.Since(l.base)) }
	for i := range l.shards {
		l.shards[i].tat = make(map[K]int64)
	}
	return l
}

// shardOf is the shard holding key.
func (l *Limiter[K]) shardOf(key K) *shard[K] {
	return &l.shards[maphash.Comparable(l.seed, key)&(shards-1)]
}

// Take charges one request to key if it fits lim, and says whether it did.
func (l *Limiter[K]) Take(key K, lim Limit) Decision { return l.apply(key, lim, take) }

// Peek says whether one request of key would fit lim, without charging it: for limits charged
// after the answer, by its outcome (Charge).
func (l *Limiter[K]) Peek(key K, lim Limit) Decision { return l.apply(key, lim, peek) }

// Charge charges one request to key whether or not it fits: the request was already served. A
// key charged beyond its limit owes the excess, and is refused until it has paid it back.
func (l *Limiter[K]) Charge(key K, lim Limit) Decision { return l.apply(key, lim, charge) }

// mode is what apply does with the request.
type mode int

const (
	peek mode = iota
	take
	charge
)

func (l *Limiter[K]) apply(key K, lim Limit, m mode) Decision {
	if lim.Off() {
		return Decision{Allowed: true, Remaining: max(lim.Quota, 0)}
	}
	now := l.clock()
	t, w := lim.interval(), int64(lim.Window)
	s := l.shardOf(key)
	s.mu.Lock()
	tat, ok := s.tat[key]
	if !ok || tat < now {
		tat = now
	}
	// The request fits when the bucket, after it, is at most a whole window from full.
	next := tat + t
	allowed := next-now <= w
	if m == charge || (m == take && allowed) {
		if !ok && len(s.tat) >= l.perShard {
			s.evict(now)
		}
		s.tat[key] = next
		tat = next
	}
	s.mu.Unlock()
	d := Decision{Allowed: allowed, Remaining: int(min(max((now+w-tat)/t, 0), int64(lim.Quota))), Reset: time.Duration(tat - now)}
	if !allowed {
		d.RetryAfter = time.Duration(next - w - now)
	}
	return d
}

// evict forgets keys to make room for one more: every sampled key whose bucket is full again
// (forgetting it changes nothing), or else the sampled key nearest to full. Map iteration starts
// at a random place, so the sample differs each time. Called with the shard locked.
func (s *shard[K]) evict(now int64) {
	var victim K
	least, seen, freed := int64(0), 0, false
	for k, tat := range s.tat {
		if tat <= now {
			delete(s.tat, k)
			freed = true
		} else if seen == 0 || tat < least {
			victim, least = k, tat
		}
		if seen++; seen == sample {
			break
		}
	}
	if !freed && seen > 0 {
		delete(s.tat, victim)
	}
}

// Len is the number of keys the limiter holds (those whose buckets are full again included,
// until they are forgotten).
func (l *Limiter[K]) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.tat)
		s.mu.Unlock()
	}
	return n
}
