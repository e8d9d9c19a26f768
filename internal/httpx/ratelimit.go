package httpx

import (
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/ratelimit"
)

// SetRateLimit writes the RateLimit-Policy field (policy: its items, written once by the caller
// with ratelimit.PolicyItem) and the RateLimit item of one policy's decision. The names go out
// as fasthttp normalizes them (Ratelimit, Ratelimit-Policy): header names are case-insensitive,
// and a service's copy of the fields then replaces the gateway's instead of adding to it.
func SetRateLimit(c *fiber.Ctx, policy, name string, d ratelimit.Decision) {
	if policy == "" {
		return
	}
	var buf [96]byte
	h := &c.Response().Header
	h.Set(ratelimit.PolicyHeader, policy)
	h.SetBytesV(ratelimit.LimitHeader, ratelimit.AppendLimitItem(buf[:0], name, d))
}

// RateLimited is the answer to a request a rate limit refused: 429 with the envelope's code
// RATE_LIMITED, the policy refused and the seconds to wait (retryAfter), the Retry-After field
// and the RateLimit fields of the policy.
func RateLimited(c *fiber.Ctx, policy, name string, d ratelimit.Decision) error {
	SetRateLimit(c, policy, name, d)
	secs := d.RetryAfterSeconds()
	c.Set(ratelimit.RetryAfterHeader, strconv.FormatInt(secs, 10))
	return apperr.New(http.StatusTooManyRequests, "too many requests: retry after "+strconv.FormatInt(secs, 10)+" s").
		With("code", apperr.CodeRateLimited).With("policy", name).With("retryAfter", secs)
}
