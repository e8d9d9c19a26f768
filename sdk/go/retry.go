package splathost

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// RetryPolicy is how a retryable request is repeated after a 5xx answer or a network error:
// exponential backoff with full jitter (a random wait between zero and the current ceiling),
// which spreads a crowd of clients out after an outage instead of having them return in step.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt; 1 (or less) disables retries.
	MaxAttempts int
	// InitialBackoff is the ceiling of the first wait.
	InitialBackoff time.Duration
	// MaxBackoff caps every wait, including one a Retry-After header asks for.
	MaxBackoff time.Duration
	// Multiplier grows the ceiling after each attempt (2 doubles it).
	Multiplier float64
}

// DefaultRetryPolicy is the policy of a new [Client]: four attempts within roughly two
// seconds of waiting, enough to ride out a restarting service without hiding an outage.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, InitialBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second, Multiplier: 2}

// fullJitter is a uniformly random wait in [0, ceiling].
func fullJitter(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// run calls attempt until it succeeds, fails for good, or the attempts run out. attempt reports
// whether its failure may be retried and any wait the server asked for. When retryable is
// false the first answer stands. The last error is returned; a cancelled context returns at
// once with the context's error.
func (p RetryPolicy) run(ctx context.Context, retryable bool, jitter func(time.Duration) time.Duration,
	attempt func() (retry bool, wait time.Duration, err error)) error {
	ceiling := p.InitialBackoff
	for n := 1; ; n++ {
		again, asked, err := attempt()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retryable || !again || n >= p.MaxAttempts {
			return err
		}
		wait := jitter(ceiling)
		if asked > wait {
			wait = asked
		}
		if p.MaxBackoff > 0 && wait > p.MaxBackoff {
			wait = p.MaxBackoff
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		next := time.Duration(float64(ceiling) * max(p.Multiplier, 1))
		if p.MaxBackoff > 0 {
			next = min(next, p.MaxBackoff)
		}
		ceiling = next
	}
}

// retryAfter reads a Retry-After header given in seconds (the form services use for 503).
func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
