package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock drives a limiter's time by hand.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func withClock[K comparable](l *Limiter[K]) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(int64(time.Hour)) // any start: the limiter never assumes time begins at 0
	l.clock = c.ns.Load
	return c
}

func TestBurstThenRefusal(t *testing.T) {
	l := New[string](1000)
	withClock(l)
	lim := Limit{Quota: 10, Window: time.Second}
	for i := 0; i < 10; i++ {
		d := l.Take("a", lim)
		require.True(t, d.Allowed, "request %d of the burst", i+1)
		require.Equal(t, 9-i, d.Remaining)
	}
	d := l.Take("a", lim)
	require.False(t, d.Allowed, "the 11th request in the same instant")
	require.Equal(t, 0, d.Remaining)
	require.Equal(t, 100*time.Millisecond, d.RetryAfter, "one request refills every Window/Quota")
	require.Equal(t, time.Second, d.Reset, "the bucket is full a whole window after the burst")
	require.True(t, l.Take("b", lim).Allowed, "another key has its own bucket")
}

func TestRefillIsContinuous(t *testing.T) {
	l := New[string](1000)
	clock := withClock(l)
	lim := Limit{Quota: 4, Window: 2 * time.Second} // one request every 500 ms
	for range 4 {
		require.True(t, l.Take("k", lim).Allowed)
	}
	require.False(t, l.Take("k", lim).Allowed)
	clock.advance(499 * time.Millisecond)
	d := l.Take("k", lim)
	require.False(t, d.Allowed, "not before the interval has passed")
	require.Equal(t, time.Millisecond, d.RetryAfter)
	clock.advance(time.Millisecond)
	require.True(t, l.Take("k", lim).Allowed, "one request after one interval")
	require.False(t, l.Take("k", lim).Allowed, "and only one")
	clock.advance(10 * time.Second)
	d = l.Peek("k", lim)
	require.True(t, d.Allowed)
	require.Equal(t, 4, d.Remaining, "an idle key is full again, never above its quota")
	require.Zero(t, d.Reset)
}

func TestPeekDoesNotChargeAndChargeOverdraws(t *testing.T) {
	l := New[int](1000)
	clock := withClock(l)
	lim := Limit{Quota: 2, Window: time.Second}
	for range 5 {
		require.True(t, l.Peek(1, lim).Allowed)
	}
	// Charged after the answer, by outcome: concurrent requests may all have been let in; each
	// is paid for, and the key waits until the excess is paid back.
	for range 6 {
		l.Charge(1, lim)
	}
	d := l.Peek(1, lim)
	require.False(t, d.Allowed)
	require.Equal(t, 2500*time.Millisecond, d.RetryAfter, "six charges of 500 ms against a 1 s window: 2.5 s owed")
	require.Equal(t, int64(3), d.RetryAfterSeconds())
	clock.advance(2500 * time.Millisecond)
	require.True(t, l.Peek(1, lim).Allowed)
}

func TestOffAllowsEverything(t *testing.T) {
	l := New[string](10)
	for range 1000 {
		require.True(t, l.Take("x", Limit{}).Allowed)
	}
	require.Zero(t, l.Len(), "an off limit keeps no state")
}

func TestHeaders(t *testing.T) {
	l := New[string](10)
	clock := withClock(l)
	lim := Limit{Quota: 100, Window: time.Second}
	require.Equal(t, `"default";q=100;w=1`, PolicyItem("default", lim))
	d := l.Take("k", lim)
	require.Equal(t, `"default";r=99;t=1`, string(AppendLimitItem(nil, "default", d)))
	for range 99 {
		l.Take("k", lim)
	}
	d = l.Take("k", lim)
	require.False(t, d.Allowed)
	require.Equal(t, `"default";r=0;t=1`, string(AppendLimitItem(nil, "default", d)), "refused: t is the Retry-After")
	require.Equal(t, int64(1), d.RetryAfterSeconds(), "10 ms rounds up to a whole second, never 0")
	clock.advance(500 * time.Millisecond)
	d = l.Peek("k", lim)
	require.Equal(t, `"default";r=50;t=1`, string(AppendLimitItem(nil, "default", d)))

	slow := Limit{Quota: 5, Window: time.Minute}
	require.Equal(t, `"visitors";q=5;w=60`, PolicyItem("visitors", slow))
	for range 5 {
		l.Take("v", slow)
	}
	d = l.Take("v", slow)
	require.Equal(t, `"visitors";r=0;t=12`, string(AppendLimitItem(nil, "visitors", d)))
	require.Equal(t, int64(12), d.RetryAfterSeconds())
}

func TestParseLimit(t *testing.T) {
	for in, want := range map[string]Limit{
		"100/1s":    {100, time.Second},
		" 100 / s ": {100, time.Second},
		"1000/10s":  {1000, 10 * time.Second},
		"5/1m":      {5, time.Minute},
		"5/m":       {5, time.Minute},
		"50/1h":     {50, time.Hour},
		"off":       {},
		"0":         {},
	} {
		got, err := ParseLimit(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		if !want.Off() {
			back, err := ParseLimit(got.String())
			require.NoError(t, err)
			require.Equal(t, got, back, "String reads back: %s", got)
		}
	}
	for _, bad := range []string{"", "100", "x/1s", "-1/1s", "0/1s", "100/500ms", "100/1.5s", "100/0s", "100/forever"} {
		_, err := ParseLimit(bad)
		require.Error(t, err, bad)
	}
}

func TestEvictionBoundsMemory(t *testing.T) {
	l := New[int](shards * 4) // four keys a shard
	withClock(l)
	lim := Limit{Quota: 1, Window: time.Minute}
	for i := range 100_000 {
		l.Take(i, lim)
	}
	require.LessOrEqual(t, l.Len(), shards*4, "a flood of distinct keys never grows past the budget")
}

func TestEvictionForgetsFullBucketsFirst(t *testing.T) {
	l := New[string](shards) // one key a shard: every new key of a shard evicts
	clock := withClock(l)
	strict := Limit{Quota: 1, Window: time.Hour}
	require.True(t, l.Take("limited", strict).Allowed)
	require.False(t, l.Take("limited", strict).Allowed)
	// Keys of the same shard whose buckets are full again: forgetting them changes nothing, and
	// they are what a full shard forgets, not the key that is being limited.
	quick := Limit{Quota: 1, Window: time.Second}
	s := l.shardOf("limited")
	for i := 0; len(s.tat) < 2 || i < 10_000; i++ {
		k := fmt.Sprint("quick-", i)
		if l.shardOf(k) != s {
			continue
		}
		s.mu.Lock()
		s.tat[k] = l.clock() // over budget on purpose: a full bucket
		s.mu.Unlock()
		if len(s.tat) >= 4 {
			break
		}
	}
	clock.advance(time.Millisecond)
	var newcomer string
	for i := 0; ; i++ {
		if k := fmt.Sprint("new-", i); l.shardOf(k) == s {
			newcomer = k
			break
		}
	}
	require.True(t, l.Take(newcomer, quick).Allowed)
	require.False(t, l.Take("limited", strict).Allowed, "the limited key survived the eviction")
}

func TestConcurrentTakesNeverExceedTheQuota(t *testing.T) {
	l := New[int](1 << 12)
	withClock(l) // time stands still: exactly Quota requests per key may pass
	lim := Limit{Quota: 50, Window: time.Second}
	const keys, goroutines, tries = 8, 16, 200
	var allowed [keys]atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range tries {
				k := (g + i) % keys
				if l.Take(k, lim).Allowed {
					allowed[k].Add(1)
				}
				l.Peek(k, lim)
			}
		})
	}
	wg.Wait()
	for k := range keys {
		require.Equal(t, int64(50), allowed[k].Load(), "key %d", k)
	}
}

func BenchmarkTakeParallel(b *testing.B) {
	l := New[string](1 << 16)
	lim := Limit{Quota: 1 << 30, Window: time.Second}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("integration-%020d", i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Take(keys[i&1023], lim)
			i++
		}
	})
}
