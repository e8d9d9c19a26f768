package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
)

const secretCause = "pq: password authentication failed for user hunter2"

func TestErrorHandler(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		status  int
		message string
		code    string // every envelope has one (apperr.StatusCode when the error sets none)
		issues  []string
		extra   map[string]any
		logged  bool
		retry   string // the Retry-After header
	}{
		{name: "validation", code: "VALIDATION", err: apperr.Invalid("validation failed", "a: bad", "b: bad"),
			status: 400, message: "validation failed", issues: []string{"a: bad", "b: bad"}},
		{name: "unauthorized", code: "UNAUTHORIZED", err: apperr.Unauthorized("invalid credentials"), status: 401, message: "invalid credentials"},
		{name: "forbidden", code: "FORBIDDEN", err: apperr.Forbidden("nope"), status: 403, message: "nope"},
		{name: "not found", code: "NOT_FOUND", err: apperr.NotFound("external user not found"), status: 404, message: "external user not found"},
		{name: "conflict", code: "CONFLICT", err: apperr.Conflict("busy"), status: 409, message: "busy"},
		{name: "gone", code: "INTEGRATION_REVOKED", err: apperr.Gone("integration revoked"), status: 410, message: "integration revoked"},
		{name: "extra fields", code: "STORAGE_QUOTA_EXCEEDED", err: apperr.New(413, "quota").With("code", "STORAGE_QUOTA_EXCEEDED").With("scope", "customer"),
			status: 413, message: "quota", extra: map[string]any{"code": "STORAGE_QUOTA_EXCEEDED", "scope": "customer"}},
		{name: "wrapped apperr", code: "NOT_FOUND", err: fmt.Errorf("handler: %w", apperr.NotFound("gone away")), status: 404, message: "gone away"},
		{name: "internal apperr", code: "INTERNAL", err: apperr.Internal(errors.New(secretCause)), status: 500, message: "internal server error", logged: true},
		{name: "plain error", code: "INTERNAL", err: errors.New(secretCause), status: 500, message: "internal server error", logged: true},
		{name: "wrapped plain error", code: "INTERNAL", err: fmt.Errorf("query: %w", errors.New(secretCause)), status: 500, message: "internal server error", logged: true},
		{name: "store unreachable is a 503 to retry", code: "UNAVAILABLE", err: fmt.Errorf("query: %w", &net.OpError{Op: "dial", Err: errors.New(secretCause)}),
			status: 503, message: "a store this request needs is unavailable or too slow; the request changed nothing, retry", logged: true, retry: "1",
			extra: map[string]any{"code": apperr.CodeUnavailable}},
		{name: "store deadline is a 503 to retry", code: "UNAVAILABLE", err: apperr.Internal(fmt.Errorf("%s: %w", secretCause, context.DeadlineExceeded)),
			status: 503, message: "a store this request needs is unavailable or too slow; the request changed nothing, retry", logged: true, retry: "1",
			extra: map[string]any{"code": apperr.CodeUnavailable}},
		{name: "fiber 404", code: "NOT_FOUND", err: fiber.ErrNotFound, status: 404, message: "route not found"},
		{name: "fiber 405", code: "METHOD_NOT_ALLOWED", err: fiber.ErrMethodNotAllowed, status: 405, message: "method not allowed"},
		{name: "fiber 413", code: "PAYLOAD_TOO_LARGE", err: fiber.ErrRequestEntityTooLarge, status: 413, message: "request body too large"},
		{name: "fiber 431", code: "HEADERS_TOO_LARGE", err: fiber.ErrRequestHeaderFieldsTooLarge, status: 431, message: "request headers too large"},
		{name: "fiber 408", code: "REQUEST_TIMEOUT", err: fiber.ErrRequestTimeout, status: 408, message: "request timeout"},
		{name: "fiber 400 hides its text", code: "VALIDATION", err: fiber.NewError(400, secretCause), status: 400, message: "bad request",
			issues: []string{"request: malformed"}},
		{name: "other fiber 4xx uses status text", code: "CLIENT_ERROR", err: fiber.NewError(418, secretCause), status: 418, message: http.StatusText(418)},
		{name: "fiber 415", code: "CLIENT_ERROR", err: fiber.ErrUnsupportedMediaType, status: 415, message: http.StatusText(415)},
		{name: "fiber 5xx is generic 500", code: "INTERNAL", err: fiber.NewError(503, secretCause), status: 500, message: "internal server error", logged: true},
		{name: "fiber 500", code: "INTERNAL", err: fiber.ErrInternalServerError, status: 500, message: "internal server error", logged: true},
		{name: "500 issues are dropped", code: "INTERNAL", err: &apperr.Error{Status: 500, Message: "internal server error", Issues: []string{"leak"}},
			status: 500, message: "internal server error", logged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			app := fiber.New(fiber.Config{ErrorHandler: ErrorHandler(testLogger(&logs))})
			app.Get("/", func(c *fiber.Ctx) error { return tt.err })
			resp, body := doReq(t, app, httptest.NewRequest(http.MethodGet, "/", nil))
			require.Equal(t, tt.status, resp.StatusCode)
			require.Equal(t, "no-store", resp.Header.Get(fiber.HeaderCacheControl))
			require.Equal(t, tt.retry, resp.Header.Get(fiber.HeaderRetryAfter))
			require.True(t, strings.HasPrefix(resp.Header.Get(fiber.HeaderContentType), fiber.MIMEApplicationJSON))
			env, m := decodeEnvelope(t, body)
			require.Equal(t, "error", env.Status)
			require.Equal(t, tt.message, env.Message)
			require.Equal(t, tt.code, m["code"])
			require.Equal(t, tt.issues, env.Issues)
			if tt.issues == nil {
				require.NotContains(t, m, "issues")
			}
			for k, v := range tt.extra {
				require.Equal(t, v, m[k], k)
			}
			require.Len(t, m, 3+len(tt.extra)-map[bool]int{true: 1}[tt.extra["code"] != nil]+map[bool]int{true: 1}[tt.issues != nil], "unexpected envelope fields: %v", m)
			require.NotContains(t, string(body), "hunter2", "the cause must never reach the client")
			if tt.logged {
				require.Contains(t, logs.String(), "request failed")
				if !strings.Contains(tt.name, "fiber") && !strings.Contains(tt.name, "dropped") {
					require.Contains(t, logs.String(), "hunter2", "the cause is logged")
				}
			} else {
				require.Empty(t, logs.String())
			}
		})
	}
}

// TestNewAppEnvelopes drives the house app: a body over the limit, a panic and an unmatched route
// all answer the envelope.
func TestNewAppEnvelopes(t *testing.T) {
	var logs bytes.Buffer
	app := NewApp("test", testLogger(&logs), 64, 0)
	app.Post("/echo", func(c *fiber.Ctx) error { return c.Send(c.Body()) })
	app.Get("/panic", func(c *fiber.Ctx) error { panic(secretCause) })
	app.Use(Fallback(app))

	t.Run("body within limit", func(t *testing.T) {
		resp, body := doReq(t, app, httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader(`{"a":1}`)))
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, `{"a":1}`, string(body))
		require.True(t, validRequestID(resp.Header.Get(RequestIDHeader)))
	})
	t.Run("body over limit", func(t *testing.T) {
		// fasthttp rejects the body while reading the request, which app.Test reports as an
		// error, so this case goes over a real listener.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- app.Listener(ln) }()
		t.Cleanup(func() {
			require.NoError(t, app.Shutdown())
			<-done
		})
		resp, err := http.Post("http://"+ln.Addr().String()+"/echo", "application/json", strings.NewReader(strings.Repeat("x", 1000)))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "body: %s", body)
		env, _ := decodeEnvelope(t, body)
		require.Equal(t, "error", env.Status)
		require.Equal(t, "request body too large", env.Message)
	})
	t.Run("panic", func(t *testing.T) {
		resp, body := doReq(t, app, httptest.NewRequest(http.MethodGet, "/panic", nil))
		require.Equal(t, 500, resp.StatusCode)
		env, _ := decodeEnvelope(t, body)
		require.Equal(t, "internal server error", env.Message)
		require.NotContains(t, string(body), "hunter2")
		require.Contains(t, logs.String(), "hunter2")
	})
	t.Run("wrong method", func(t *testing.T) {
		resp, body := doReq(t, app, httptest.NewRequest(http.MethodGet, "/echo", nil))
		require.Equal(t, 405, resp.StatusCode)
		require.Equal(t, "POST", resp.Header.Get(fiber.HeaderAllow))
		env, _ := decodeEnvelope(t, body)
		require.Equal(t, "method not allowed", env.Message)
	})
	t.Run("unknown route", func(t *testing.T) {
		resp, body := doReq(t, app, httptest.NewRequest(http.MethodGet, "/nowhere", nil))
		require.Equal(t, 404, resp.StatusCode)
		env, _ := decodeEnvelope(t, body)
		require.Equal(t, "route not found", env.Message)
	})
}
