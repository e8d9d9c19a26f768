package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/routes"
)

const (
	problemTooLong = "must be at most 256 characters"
	problemControl = "must not contain line breaks or control characters"
	problemBlank   = "must not be blank"
)

func TestExternalUserProblem(t *testing.T) {
	tests := []struct {
		name string
		eu   string
		want string
	}{
		{name: "simple", eu: "customer-42"},
		{name: "single char", eu: "x"},
		{name: "opaque punctuation", eu: "user@example.com|tenant:7/é"},
		{name: "inner spaces", eu: "a b c"},
		{name: "leading and trailing space", eu: " a "},
		{name: "256 ascii", eu: strings.Repeat("a", 256)},
		{name: "257 ascii", eu: strings.Repeat("a", 257), want: problemTooLong},
		{name: "256 two-byte runes", eu: strings.Repeat("é", 256)},
		{name: "257 two-byte runes", eu: strings.Repeat("é", 257), want: problemTooLong},
		{name: "256 four-byte runes", eu: strings.Repeat("😀", 256)},
		{name: "257 four-byte runes", eu: strings.Repeat("😀", 257), want: problemTooLong},
		{name: "invalid utf-8 counted in bytes", eu: strings.Repeat("\xff", 256)},
		{name: "invalid utf-8 over 256 bytes", eu: strings.Repeat("\xff", 257), want: problemTooLong},
		{name: "line feed", eu: "a\nb", want: problemControl},
		{name: "carriage return", eu: "a\rb", want: problemControl},
		{name: "crlf at end", eu: "ab\r\n", want: problemControl},
		{name: "tab", eu: "a\tb", want: problemControl},
		{name: "nul", eu: "a\x00b", want: problemControl},
		{name: "escape", eu: "\x1b[31m", want: problemControl},
		{name: "del", eu: "a\x7f", want: problemControl},
		{name: "only newline", eu: "\n", want: problemControl},
		{name: "blank", eu: " ", want: problemBlank},
		{name: "many blanks", eu: strings.Repeat(" ", 10), want: problemBlank},
		{name: "too long wins over control", eu: strings.Repeat("a", 300) + "\n", want: problemTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, externalUserProblem(tt.eu))
		})
	}
}

func TestExternalUserProblemUnicodeLineBreaks(t *testing.T) {
	for _, eu := range []string{"a\u0085b", "a\u2028b", "a\u2029b", "a\u009bb"} {
		require.Equal(t, problemControl, externalUserProblem(eu), "%q", eu)
	}
}

type envelope struct {
	Status  string   `json:"status"`
	Message string   `json:"message"`
	Issues  []string `json:"issues"`
}

func do(t *testing.T, app *fiber.App, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := app.Test(req, -1)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode, body
}

func testApp() *fiber.App {
	return fiber.New(fiber.Config{ErrorHandler: httpx.ErrorHandler(slog.New(slog.NewJSONHandler(io.Discard, nil)))})
}

// echoCaller answers the caller the middleware established.
func echoCaller(c *fiber.Ctx) error {
	caller := httpx.CallerOf(c)
	if caller == nil {
		return c.SendString("null")
	}
	return c.JSON(caller)
}

// TestAdmitExternalUserHeader drives admit, which applies the EU rule to the real header.
func TestAdmitExternalUserHeader(t *testing.T) {
	app := testApp()
	a := &auth{}
	app.Get("/", func(c *fiber.Ctx) error {
		return a.admit(c, &httpx.Caller{Scheme: httpx.SchemeKey, IntegrationID: "i1"})
	}, echoCaller)

	tests := []struct {
		name    string
		eu      *string
		status  int
		wantEU  string
		present bool
		issue   string
	}{
		{name: "absent", status: 200},
		{name: "valid", eu: ptr("customer-42"), status: 200, wantEU: "customer-42", present: true},
		{name: "256 characters", eu: ptr(strings.Repeat("é", 256)), status: 200, wantEU: strings.Repeat("é", 256), present: true},
		{name: "257 characters", eu: ptr(strings.Repeat("a", 257)), status: 400, issue: problemTooLong},
		{name: "tab", eu: ptr("a\tb"), status: 400, issue: problemControl},
		{name: "control byte", eu: ptr("a\x01b"), status: 400, issue: problemControl},
		// HTTP strips optional whitespace around a field value (RFC 9110, 5.5).
		{name: "surrounding whitespace stripped", eu: ptr(" x "), status: 200, wantEU: "x", present: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.eu != nil {
				req.Header.Set(httpx.ExternalUserHeader, *tt.eu)
			}
			status, body := do(t, app, req)
			require.Equal(t, tt.status, status, "body: %s", body)
			if tt.status != 200 {
				var env envelope
				require.NoError(t, json.Unmarshal(body, &env))
				require.Equal(t, "error", env.Status)
				require.Equal(t, "invalid "+httpx.ExternalUserHeader+" header", env.Message)
				require.Equal(t, []string{httpx.ExternalUserHeader + ": " + tt.issue}, env.Issues)
				return
			}
			var caller httpx.Caller
			require.NoError(t, json.Unmarshal(body, &caller))
			require.Equal(t, "i1", caller.IntegrationID)
			require.Equal(t, tt.wantEU, caller.ExternalUserID)
			require.Equal(t, tt.present, caller.HasExternalUser)
		})
	}
}

func ptr(s string) *string { return &s }

func TestBearer(t *testing.T) {
	app := testApp()
	app.Get("/", func(c *fiber.Ctx) error {
		tok, ok := bearer(c)
		return c.JSON(fiber.Map{"tok": tok, "ok": ok})
	})
	tests := []struct {
		header string
		tok    string
		ok     bool
	}{
		{header: "", ok: false},
		{header: "Bearer", ok: false},
		{header: "Bearer ", ok: false},
		{header: "Bearer    ", ok: false},
		{header: "Basic abc", ok: false},
		{header: "Bearerabc", ok: false},
		{header: "Bearer msk_abc", tok: "msk_abc", ok: true},
		{header: "bearer msk_abc", tok: "msk_abc", ok: true},
		{header: "BEARER msk_abc", tok: "msk_abc", ok: true},
		{header: "Bearer   msk_abc  ", tok: "msk_abc", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.header != "" {
				req.Header.Set(fiber.HeaderAuthorization, tt.header)
			}
			status, body := do(t, app, req)
			require.Equal(t, 200, status)
			var got struct {
				Tok string `json:"tok"`
				OK  bool   `json:"ok"`
			}
			require.NoError(t, json.Unmarshal(body, &got))
			require.Equal(t, tt.ok, got.OK)
			if tt.ok {
				require.Equal(t, tt.tok, got.Tok)
			}
		})
	}
}

func TestAdminToken(t *testing.T) {
	const token = "admin-token-0123456789"
	a := &auth{adminHash: sha256.Sum256([]byte(token))}
	app := testApp()
	app.Get("/admin/x", a.admin, echoCaller)
	tests := []struct {
		name, header string
		status       int
	}{
		{name: "valid", header: "Bearer " + token, status: 200},
		{name: "missing", header: "", status: 401},
		{name: "wrong", header: "Bearer " + token + "x", status: 401},
		{name: "prefix", header: "Bearer " + token[:10], status: 401},
		{name: "not bearer", header: token, status: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/admin/x", nil)
			if tt.header != "" {
				req.Header.Set(fiber.HeaderAuthorization, tt.header)
			}
			status, body := do(t, app, req)
			require.Equal(t, tt.status, status, "body: %s", body)
			if status == 200 {
				require.JSONEq(t, `{"s":"admin"}`, string(body))
			} else {
				require.True(t, bytes.Contains(body, []byte(`"status":"error"`)), "body: %s", body)
			}
		})
	}

	t.Run("empty configured token never matches an empty bearer", func(t *testing.T) {
		a := &auth{adminHash: sha256.Sum256(nil)}
		app := testApp()
		app.Get("/admin/x", a.admin, echoCaller)
		for _, h := range []string{"", "Bearer", "Bearer ", "Bearer  "} {
			req := httptest.NewRequest(http.MethodGet, "/admin/x", nil)
			if h != "" {
				req.Header.Set(fiber.HeaderAuthorization, h)
			}
			status, _ := do(t, app, req)
			require.Equal(t, 401, status, "%q", h)
		}
	})
}

func TestCallerOf(t *testing.T) {
	in := &credentials.Integration{ID: "i", AccountID: "a", ProductSlug: "p", PublicKey: "mpk_x",
		SecretHash: []byte("h"), Capabilities: []string{"view"}, RestAccess: true}
	got := callerOf(in, httpx.SchemeKey)
	require.Equal(t, &httpx.Caller{Scheme: httpx.SchemeKey, IntegrationID: "i", AccountID: "a", ProductSlug: "p",
		PublicKey: "mpk_x", Capabilities: []string{"view"}}, got)
}

// fakeSessions accepts the session token "good" (the verifier's own rules are tested in the
// session package and end to end).
type fakeSessions struct{}

func (fakeSessions) VerifySession(_ context.Context, token string) (*httpx.Caller, error) {
	if token != "good" {
		return nil, apperr.Unauthorized("invalid or expired session token")
	}
	return &httpx.Caller{Scheme: httpx.SchemeSession, IntegrationID: "i1"}, nil
}

// TestForwardLongestPrefixFirst: with every service in its own process, a path goes to the
// service owning its longest matching prefix, whatever the order of the upstreams — the editor
// routes (/api/embed/editor, scene) inside the session service's /api/embed.
func TestForwardLongestPrefixFirst(t *testing.T) {
	secret := []byte("internal-secret-for-tests")
	upstream := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			caller, err := httpx.VerifyCaller(secret, r.Header.Get(httpx.CallerHeader), time.Now())
			scheme := ""
			if err == nil {
				scheme = string(caller.Scheme)
			}
			_, _ = io.WriteString(w, name+" "+r.URL.Path+" "+scheme)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	app, err := New(Options{
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), BodyLimit: 1 << 20, AdminToken: "admin-token-0123456789",
		InternalSecret: secret, Sessions: fakeSessions{},
		// The session service first: registration order alone would hand it /api/embed/editor.
		Upstreams: []Upstream{
			{Name: "session", Prefixes: routes.Session, URL: upstream("session")},
			{Name: "user", Prefixes: routes.User, URL: upstream("user")},
			{Name: "scene", Prefixes: routes.Scene, URL: upstream("scene")},
		},
	})
	require.NoError(t, err)
	for _, tt := range []struct{ method, path, want string }{
		{"PATCH", "/api/embed/editor/splats/0123456789abcdef01234567", "scene /api/embed/editor/splats/0123456789abcdef01234567 session"},
		{"POST", "/api/embed/editor/uploads/splat-file", "scene /api/embed/editor/uploads/splat-file session"},
		{"GET", "/api/embed/editor/splats/0123456789abcdef01234567/clone/x", "scene /api/embed/editor/splats/0123456789abcdef01234567/clone/x session"},
		{"GET", "/api/embed/editor", "scene /api/embed/editor session"},
		{"GET", "/api/embed/splats/0123456789abcdef01234567", "session /api/embed/splats/0123456789abcdef01234567 session"},
		{"POST", "/api/embed/views", "session /api/embed/views session"},
		{"GET", "/api/embed/editorial", "session /api/embed/editorial session"},
		{"GET", "/embed/viewer?session=good", "session /embed/viewer session"},
		{"GET", "/embed/editor?session=good", "session /embed/editor session"},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if strings.HasPrefix(tt.path, "/api/embed") {
				req.Header.Set(fiber.HeaderAuthorization, "Bearer good")
			}
			status, body := do(t, app, req)
			require.Equal(t, 200, status, string(body))
			require.Equal(t, tt.want, string(body))
		})
	}

	t.Run("a page with a bad token is an HTML 401 from the gateway", func(t *testing.T) {
		for _, path := range []string{"/embed/viewer", "/embed/editor?session=", "/embed/viewer?session=forged"} {
			resp, err := app.Test(httptest.NewRequest("GET", path, nil), -1)
			require.NoError(t, err)
			require.Equal(t, 401, resp.StatusCode, path)
			require.Equal(t, fiber.MIMETextHTMLCharsetUTF8, resp.Header.Get(fiber.HeaderContentType), path)
		}
	})
}
