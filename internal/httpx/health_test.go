package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadyzDetails: a detail's report appears under "details" whether the process is ready or
// not, a failing detail reads as unavailable without its cause, and no detail ever fails
// readiness; only a failing check does.
func TestReadyzDetails(t *testing.T) {
	read := func(checks map[string]Check, details map[string]Detail) (int, map[string]any) {
		app := NewApp("health-test", slog.New(slog.DiscardHandler), 1<<20, 0)
		MountHealthDetails(app, slog.New(slog.DiscardHandler), checks, details)
		resp, err := app.Test(httptest.NewRequest("GET", "/readyz", nil))
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, body
	}
	ok := func(context.Context) error { return nil }
	details := map[string]Detail{
		"nodes":  func(context.Context) (any, error) { return map[string]any{"stalled": []string{"a:1"}}, nil },
		"broken": func(context.Context) (any, error) { return nil, errors.New("secret cause") },
	}
	want := map[string]any{"nodes": map[string]any{"stalled": []any{"a:1"}}, "broken": map[string]any{"error": "unavailable"}}

	status, body := read(map[string]Check{"db": ok}, details)
	require.Equal(t, 200, status, "a detail, even a failing one, never fails readiness")
	require.Equal(t, map[string]any{"status": "ok", "details": want}, body)

	status, body = read(map[string]Check{"db": func(context.Context) error { return errors.New("down") }}, details)
	require.Equal(t, 503, status)
	require.Equal(t, []any{"db"}, body["failing"])
	require.Equal(t, want, body["details"])

	status, body = read(map[string]Check{"db": ok}, nil)
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"status": "ok"}, body, "no details, no key")
}
