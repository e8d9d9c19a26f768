package gateway

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
)

// keptHeaders are the answer headers a replay repeats: those that describe the body or the
// resource. Per-request ones (X-Request-Id, tracing, Date) are the replay's own.
var keptHeaders = []string{fiber.HeaderContentType, fiber.HeaderCacheControl, fiber.HeaderLocation, "Preference-Applied"}

// errNotApplied replaces an "outcome unknown" answer once the key is settled without an effect.
var errNotApplied = apperr.New(fiber.StatusBadGateway,
	"the request failed before it took effect (nothing was changed); retry with the same "+idempotency.KeyHeader)

// finishTimeout bounds the write of the answer after the request ran: it must not hang the
// client's answer, and a failure leaves the key to its lease.
const finishTimeout = 5 * time.Second

// IdempotentRoute is a method and a path pattern whose "*" segments match any one segment.
type IdempotentRoute struct {
	Method  string
	Pattern string
}

// keyMiddleware applies the Idempotency-Key protocol (package idempotency) to its routes. It must run after authentication: the key
// belongs to the authenticated integration and EU, never to anything the client claims.
type keyMiddleware struct {
	store  *idempotency.Store
	log    *slog.Logger
	routes []IdempotentRoute
}

// newKeyMiddleware returns the middleware for routes, keeping keys in store.
func newKeyMiddleware(store *idempotency.Store, log *slog.Logger, routes []IdempotentRoute) *keyMiddleware {
	if log == nil {
		log = slog.Default()
	}
	return &keyMiddleware{store: store, log: log, routes: routes}
}

// Handle is the Fiber handler. Requests without the header, or to other routes, pass through
// untouched (the protocol lets a server ignore the header where it does not apply).
func (m *keyMiddleware) Handle(c *fiber.Ctx) error {
	path := strings.TrimSuffix(c.Path(), "/")
	if !m.covers(c.Method(), path) {
		return c.Next()
	}
	values := c.Request().Header.PeekAll(idempotency.KeyHeader)
	if len(values) == 0 {
		return c.Next()
	}
	if len(values) > 1 {
		return apperr.Invalid("invalid "+idempotency.KeyHeader+" header", idempotency.KeyHeader+": must be sent once")
	}
	key := string(values[0])
	if problem := idempotency.KeyProblem(key); problem != "" {
		return apperr.Invalid("invalid "+idempotency.KeyHeader+" header", idempotency.KeyHeader+": "+problem)
	}
	caller := httpx.CallerOf(c)
	if caller == nil || caller.IntegrationID == "" {
		return c.Next()
	}
	scope := idempotency.Scope{IntegrationID: caller.IntegrationID, Method: c.Method(), Path: path, Key: key}
	if caller.HasExternalUser {
		scope.ExternalUserID = caller.ExternalUserID
	}
	// The raw body: c.Body() would decompress, and two encodings of one payload are two requests.
	bodyHash := sha256.Sum256(c.Request().Body())
	claim, err := m.store.Claim(c.UserContext(), scope, bodyHash[:])
	if err != nil {
		return apperr.Internal(err)
	}
	switch claim.Outcome {
	case idempotency.Reused:
		return apperr.New(http.StatusUnprocessableEntity,
			idempotency.KeyHeader+" was already used with another request body; use a new key for a new request").With("code", idempotency.CodeReused)
	case idempotency.InUse:
		c.Set(fiber.HeaderRetryAfter, "1")
		return apperr.Conflict("the first request with this "+idempotency.KeyHeader+" is still running; retry later").With("code", idempotency.CodeInUse)
	case idempotency.Replay:
		sendKept(c, claim.Answer)
		c.Set(idempotency.ReplayedHeader, "true")
		return nil
	}
	return m.run(c, claim)
}

// run hands an owned request on with its fence, renewing the claim while it runs, then keeps
// its answer. A 5xx (the service failed, or did not answer) or a 429 settles the claim instead: the key
// is released so that a retry runs again, unless the service recorded an answer with its
// effect, which is then the answer sent, since it is what happened.
func (m *keyMiddleware) run(c *fiber.Ctx, claim idempotency.Claim) error {
	httpx.SetFence(c, claim.Fence())
	stop := m.store.Hold(claim)
	err := c.Next()
	stop()
	if err != nil {
		// Write the error now: the answer to keep is the one the client gets.
		if herr := c.App().ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.UserContext()), finishTimeout)
	defer cancel()
	resp := c.Response()
	// A 429 is settled like a 5xx: it did nothing and asks for a retry after Retry-After (a
	// bound on open uploads, a running clone), which a kept answer would refuse for 24 h.
	if resp.StatusCode() >= 500 || resp.StatusCode() == fiber.StatusTooManyRequests {
		recorded, err := m.store.Settle(ctx, claim)
		if err != nil {
			m.log.WarnContext(ctx, "idempotency key held after a 5xx until its lease ends", "error", err, "requestId", httpx.RequestID(c))
			return nil
		}
		if recorded != nil {
			m.log.InfoContext(ctx, "the service recorded its answer but it was lost on the way; sending the recorded one",
				"failedStatus", resp.StatusCode(), "requestId", httpx.RequestID(c))
			resp.Header.Del(fiber.HeaderRetryAfter)
			sendKept(c, *recorded)
			return nil
		}
		if resp.StatusCode() == fiber.StatusGatewayTimeout {
			// Settled without an effect: whatever was unknown is known now.
			if herr := c.App().ErrorHandler(c, errNotApplied); herr != nil {
				_ = c.SendStatus(fiber.StatusBadGateway)
			}
		}
		return nil
	}
	answer := idempotency.Answer{Status: resp.StatusCode(), Headers: map[string]string{}, Body: append([]byte(nil), resp.Body()...)}
	for _, h := range keptHeaders {
		if v := resp.Header.Peek(h); len(v) > 0 {
			answer.Headers[h] = string(v)
		}
	}
	if err := m.store.Finish(ctx, claim, answer); err != nil {
		m.log.WarnContext(ctx, "idempotency answer not kept; the key is held until its lease ends", "error", err, "requestId", httpx.RequestID(c))
	}
	return nil
}

// sendKept writes a kept answer.
func sendKept(c *fiber.Ctx, a idempotency.Answer) {
	for k, v := range a.Headers {
		c.Set(k, v)
	}
	c.Status(a.Status)
	c.Response().SetBodyRaw(a.Body)
}

// covers reports whether method and path are one of the middleware's routes.
func (m *keyMiddleware) covers(method, path string) bool {
	for _, r := range m.routes {
		if r.Method == method && matchPattern(r.Pattern, path) {
			return true
		}
	}
	return false
}

// matchPattern matches path against pattern segment by segment; literal segments compare
// without case, as the gateway routes them.
func matchPattern(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if p == "*" {
			if xs[i] == "" {
				return false
			}
			continue
		}
		if !strings.EqualFold(p, xs[i]) {
			return false
		}
	}
	return true
}
