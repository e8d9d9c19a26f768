package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/idempotency"
)

// TestDeadlineBoundsWrites: a request that changes something runs under the app's budget, and a
// store call cut off by it answers the retryable 503 TIMEOUT, not a 500; reads have no deadline
// (they stream bytes and hold sockets).
func TestDeadlineBoundsWrites(t *testing.T) {
	var logs bytes.Buffer
	app := NewApp("test", testLogger(&logs), 1<<10, 50*time.Millisecond)
	hung := func(c *fiber.Ctx) error {
		if _, ok := c.UserContext().Deadline(); !ok {
			return c.SendString("no deadline")
		}
		<-c.UserContext().Done() // a store call that never answers
		return apperr.Internal(c.UserContext().Err())
	}
	app.Get("/read", hung)
	app.Post("/write", hung)
	app.Put("/write", func(c *fiber.Ctx) error {
		<-c.UserContext().Done()
		return c.UserContext().Err() // unwrapped, as a driver returns it
	})

	resp, body := doReq(t, app, httptest.NewRequest(http.MethodGet, "/read", nil))
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "no deadline", string(body))

	for _, method := range []string{http.MethodPost, http.MethodPut} {
		start := time.Now()
		resp, body = doReq(t, app, httptest.NewRequest(method, "/write", nil))
		require.Less(t, time.Since(start), 5*time.Second)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, string(body))
		require.Equal(t, "1", resp.Header.Get(fiber.HeaderRetryAfter))
		var env map[string]any
		require.NoError(t, json.Unmarshal(body, &env))
		require.Equal(t, "error", env["status"])
		require.Equal(t, apperr.CodeUnavailable, env["code"])
		require.Contains(t, env["message"], "changed nothing")
	}
}

// TestFenceTravelsSigned: a fence set on a request reaches a service in another process inside
// the signed caller, and lands in the service's request context.
func TestFenceTravelsSigned(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	signer := NewCallerSigner(secret)
	caller := &Caller{Scheme: SchemeKey, IntegrationID: "i"}
	plain, err := signer.Sign(caller, time.Now())
	require.NoError(t, err)
	fenced := *caller
	fenced.Fence = "ab.lease"
	h, err := signer.Sign(&fenced, time.Now())
	require.NoError(t, err)
	require.NotEqual(t, plain, h, "a fenced caller is not served from the signature cache")

	app := fiber.New()
	app.Use(TrustSignedCaller(secret))
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString(idempotency.FenceOf(c.UserContext())) })
	for header, want := range map[string]string{h: "ab.lease", plain: ""} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set(CallerHeader, header)
		resp, body := doReq(t, app, req)
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, want, string(body))
	}
	require.Equal(t, "", idempotency.FenceOf(context.Background()))
}
