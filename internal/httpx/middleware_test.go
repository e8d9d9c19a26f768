package httpx

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestValidRequestID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"a", true},
		{"abc-123_DEF.ghi:jkl", true},
		{"0123456789abcdef01234567", true},
		{"550e8400-e29b-41d4-a716-446655440000", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{"a b", false},
		{"a\nb", false},
		{"a\rb", false},
		{"a\x00b", false},
		{"é", false},
		{"<script>", false},
		{"a/b", false},
		{"a,b", false},
		{"a;b", false},
		{"\"a\"", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			require.Equal(t, tt.want, validRequestID(tt.id))
		})
	}
}

func TestRequestIDs(t *testing.T) {
	app := fiber.New()
	app.Use(RequestIDs())
	app.Get("/", func(c *fiber.Ctx) error {
		// The handler, the request header and the response header agree.
		require.Equal(t, RequestID(c), c.Get(RequestIDHeader))
		return c.SendString(RequestID(c))
	})

	tests := []struct {
		name     string
		incoming string
		keep     bool
	}{
		{name: "absent", incoming: ""},
		{name: "valid kept", incoming: "integrator-req:42.a_b", keep: true},
		{name: "max length kept", incoming: strings.Repeat("Z", 128), keep: true},
		{name: "too long replaced", incoming: strings.Repeat("Z", 129)},
		{name: "space replaced", incoming: "a b"},
		{name: "injection replaced", incoming: "x<script>alert(1)</script>"},
		{name: "non-ascii replaced", incoming: "réq"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.incoming != "" {
				req.Header.Set(RequestIDHeader, tt.incoming)
			}
			resp, body := doReq(t, app, req)
			require.Equal(t, 200, resp.StatusCode)
			got := resp.Header.Get(RequestIDHeader)
			require.Equal(t, got, string(body))
			if tt.keep {
				require.Equal(t, tt.incoming, got)
				return
			}
			require.NotEqual(t, tt.incoming, got)
			require.Len(t, got, 24)
			require.True(t, isHex24(got), got)
			require.Equal(t, strings.ToLower(got), got)
		})
	}

	t.Run("generated ids differ", func(t *testing.T) {
		seen := map[string]bool{}
		for i := 0; i < 20; i++ {
			resp, _ := doReq(t, app, httptest.NewRequest(http.MethodGet, "/", nil))
			id := resp.Header.Get(RequestIDHeader)
			require.False(t, seen[id], "duplicate id %s", id)
			seen[id] = true
		}
	})
}

func TestISOTime(t *testing.T) {
	loc := time.FixedZone("x", 5*3600+1800)
	at := time.Date(2026, 6, 15, 12, 30, 45, 123456789, loc)
	require.Equal(t, "2026-06-15T07:00:45.123Z", ISOTime(at))
	require.Nil(t, ISOTimePtr(nil))
	require.Equal(t, "2026-06-15T07:00:45.123Z", *ISOTimePtr(&at))
	require.Equal(t, "2026-06-15T07:00:45.000Z", ISOTime(time.Date(2026, 6, 15, 7, 0, 45, 0, time.UTC)))
}
