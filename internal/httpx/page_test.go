package httpx

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
)

// TestPageErrorsAreHTML drives the error handler for requests marked as pages: an HTML page
// with the error's status and message (escaped), no script, and the page headers.
func TestPageErrorsAreHTML(t *testing.T) {
	app := fiber.New(fiber.Config{ErrorHandler: ErrorHandler(slog.New(slog.NewJSONHandler(io.Discard, nil)))})
	app.Get("/page", Page, func(c *fiber.Ctx) error {
		return apperr.Unauthorized(`bad <script>alert(1)</script> token`)
	})
	app.Get("/framed", Page, func(c *fiber.Ctx) error {
		SetPageHeaders(c, "default-src 'self'", []string{"https://shop.example.com", "'self'"})
		return apperr.Forbidden("no editor")
	})
	app.Get("/api", func(c *fiber.Ctx) error { return apperr.Unauthorized("x") })

	resp, err := app.Test(httptest.NewRequest("GET", "/page", nil), -1)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, 401, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	// Its one inline style is allowed by its hash, nothing else loads or runs.
	sum := sha256.Sum256([]byte(errorPageStyle))
	require.Equal(t, "default-src 'none'; style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+
		"'; base-uri 'none'; form-action 'none'; frame-ancestors *", resp.Header.Get("Content-Security-Policy"))
	require.Contains(t, string(body), "<style>"+errorPageStyle+"</style>")
	require.True(t, strings.HasPrefix(string(body), "<!doctype html>"), string(body))
	require.NotContains(t, strings.ToLower(string(body)), "<script")
	require.Contains(t, string(body), "bad &lt;script&gt;alert(1)&lt;/script&gt; token")
	require.Contains(t, string(body), `<html lang="en">`)
	require.Contains(t, string(body), `<meta name="viewport"`)

	resp, err = app.Test(httptest.NewRequest("GET", "/framed", nil), -1)
	require.NoError(t, err)
	require.Equal(t, 403, resp.StatusCode)
	require.Equal(t, errorPagePolicy+"; frame-ancestors https://shop.example.com 'self'",
		resp.Header.Get("Content-Security-Policy"), "the error page keeps the frame ancestors, not the page's policy")

	resp, err = app.Test(httptest.NewRequest("GET", "/api", nil), -1)
	require.NoError(t, err)
	require.Equal(t, fiber.MIMEApplicationJSON, resp.Header.Get("Content-Type"), "only pages answer HTML")
}

// TestKeyCallerAdmitsSessionsOnlyWhenAdmitted: a session caller reaches a v1 handler only
// through a route that admitted it (the editor embed's editorScope).
func TestKeyCallerAdmitsSessionsOnlyWhenAdmitted(t *testing.T) {
	for _, tt := range []struct {
		name   string
		caller *Caller
		admit  bool
		ok     bool
	}{
		{"key", &Caller{Scheme: SchemeKey}, false, true},
		{"session", &Caller{Scheme: SchemeSession}, false, false},
		{"admitted session", &Caller{Scheme: SchemeSession}, true, true},
		{"admitted secret bearer", &Caller{Scheme: SchemeSecret}, true, false},
		{"admin", &Caller{Scheme: SchemeAdmin}, true, false},
		{"none", nil, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			app := fiber.New()
			app.Get("/", func(c *fiber.Ctx) error {
				if tt.caller != nil {
					SetCaller(c, tt.caller)
				}
				if tt.admit {
					AdmitSessionAsKey(c)
				}
				_, err := KeyCaller(c)
				if err != nil {
					return c.SendStatus(apperr.From(err).Status)
				}
				return c.SendStatus(200)
			})
			resp, err := app.Test(httptest.NewRequest("GET", "/", nil), -1)
			require.NoError(t, err)
			if tt.ok {
				require.Equal(t, 200, resp.StatusCode)
			} else {
				require.Equal(t, 401, resp.StatusCode)
			}
		})
	}
}
