package httpx

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
)

func TestMatchPath(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/", "/", true},
		{"/", "", true},
		{"/", "/x", false},
		{"/a", "/a", true},
		{"/a", "/a/", true},
		{"/a", "a", true},
		{"/a", "/b", false},
		{"/a", "/a/b", false},
		{"/a/b", "/a", false},
		{"/api/v1/external-user", "/api/v1/external-user", true},
		{"/api/v1/external-user", "/api/v1/external-user/usage", false},
		{"/api/v1/external-user/usage", "/api/v1/external-user", false},
		{"/api/v1/splats/:splatId", "/api/v1/splats/abc", true},
		{"/api/v1/splats/:splatId", "/api/v1/splats/abc/", true},
		{"/api/v1/splats/:splatId", "/api/v1/splats", false},
		{"/api/v1/splats/:splatId", "/api/v1/splats/", false},
		{"/api/v1/splats/:splatId", "/api/v1/splats//", false},
		{"/api/v1/splats/:splatId", "/api/v1/splats/abc/clone", false},
		{"/api/v1/splats/:splatId/clone/:jobId", "/api/v1/splats/a/clone/b", true},
		{"/api/v1/splats/:splatId/clone/:jobId", "/api/v1/splats/a/clone", false},
		{"/api/v1/splats/:splatId/clone/:jobId", "/api/v1/splats/a/other/b", false},
		{"/api/v1/splats/:splatId/clone/:jobId", "/api/v1/splats//clone/b", false},
		{"/api/v1/*", "/api/v1/anything/at/all", true},
		{"/api/v1/*", "/api/v1/x", true},
		{"/api/v1/*", "/api/v1", true},
		{"/api/v1/*", "/api/v2/x", false},
		{"/api/v1/*", "/api", false},
		{"/*", "/", true},
		{"/*", "/deep/path", true},
		{"/a/:id/*", "/a/1/x/y", true},
		{"/a/:id/*", "/a//x", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, matchPath(tt.pattern, tt.path))
		})
	}
}

// testLogger returns a logger writing into buf.
func testLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, nil))
}

type envelope struct {
	Status  string   `json:"status"`
	Message string   `json:"message"`
	Issues  []string `json:"issues"`
}

// doJSON runs req against app and decodes the error envelope.
func doReq(t *testing.T, app *fiber.App, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := app.Test(req, -1)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, body
}

func decodeEnvelope(t *testing.T, body []byte) (envelope, map[string]any) {
	t.Helper()
	var env envelope
	require.NoError(t, json.Unmarshal(body, &env), "body: %s", body)
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	return env, m
}

func TestFallback(t *testing.T) {
	var logs bytes.Buffer
	app := fiber.New(fiber.Config{ErrorHandler: ErrorHandler(testLogger(&logs))})
	ok := func(c *fiber.Ctx) error { return c.SendString("ok") }
	app.Get("/a/:id", ok)
	app.Put("/a/:id", ok)
	app.Delete("/a/:id", ok)
	app.Post("/b/*", ok)
	app.Get("/c", ok)
	app.Patch("/c", ok)
	app.Use(Fallback(app))

	tests := []struct {
		method, path string
		status       int
		allow        []string // nil: no Allow header
	}{
		{http.MethodGet, "/a/1", 200, nil},
		{http.MethodPost, "/a/1", 405, []string{"DELETE", "GET", "PUT"}},
		{http.MethodPatch, "/a/1", 405, []string{"DELETE", "GET", "PUT"}},
		{http.MethodGet, "/a/1/x", 404, nil},
		{http.MethodGet, "/a", 404, nil},
		{http.MethodGet, "/b/x/y", 405, []string{"POST"}},
		{http.MethodPost, "/b/x/y", 200, nil},
		{http.MethodPut, "/c", 405, []string{"GET", "PATCH"}},
		{http.MethodDelete, "/c", 405, []string{"GET", "PATCH"}},
		{http.MethodGet, "/nope", 404, nil},
		{http.MethodDelete, "/", 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, body := doReq(t, app, httptest.NewRequest(tt.method, tt.path, nil))
			require.Equal(t, tt.status, resp.StatusCode, "body: %s", body)
			if tt.status == 200 {
				return
			}
			env, _ := decodeEnvelope(t, body)
			require.Equal(t, "error", env.Status)
			require.Empty(t, env.Issues)
			allow := resp.Header.Get(fiber.HeaderAllow)
			if tt.allow == nil {
				require.Empty(t, allow)
				require.Equal(t, "route not found", env.Message)
				return
			}
			require.Equal(t, "method not allowed", env.Message)
			got := strings.Split(allow, ", ")
			sort.Strings(got)
			require.Equal(t, tt.allow, got, "Allow: %q (HEAD must not be listed)", allow)
		})
	}
	require.Empty(t, logs.String(), "4xx answers are not logged as failures")
}
