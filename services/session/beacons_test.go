package session

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ratelimit"
)

// beaconApp answers GET /{sid}/{view|like}/{visitor} with 204 when the bounds admit the beacon.
func beaconApp(cfg config.RateLimits) *fiber.App {
	s := &Service{}
	s.UseBeaconLimits(cfg)
	app := httpx.NewApp("test", slog.New(slog.NewTextHandler(io.Discard, nil)), 1<<20, 0)
	app.Get("/:sid/:kind/:visitor", func(c *fiber.Ctx) error {
		httpx.SetCaller(c, &httpx.Caller{Scheme: httpx.SchemeSession, Session: map[string]any{httpx.SessionID: c.Params("sid")}})
		if err := s.beacons.admit(c, c.Params("visitor"), c.Params("kind") == "view"); err != nil {
			return err
		}
		return c.SendStatus(204)
	})
	return app
}

func sendBeacon(t *testing.T, app *fiber.App, path string) (int, string) {
	t.Helper()
	resp, err := app.Test(httptest.NewRequest("GET", path, nil), -1)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestSessionIntroducesFewNewVisitors(t *testing.T) {
	cfg := config.DefaultRateLimits
	cfg.Visitors = ratelimit.Limit{Quota: 3, Window: time.Minute}
	cfg.Views = ratelimit.Limit{}
	app := beaconApp(cfg)
	for _, v := range []string{"a", "b", "c"} {
		status, body := sendBeacon(t, app, "/s1/like/"+v)
		require.Equal(t, 204, status, body)
	}
	status, body := sendBeacon(t, app, "/s1/view/d")
	require.Equal(t, 429, status)
	require.Contains(t, body, `"code":"RATE_LIMITED"`)
	require.Contains(t, body, `"policy":"visitors"`)
	status, _ = sendBeacon(t, app, "/s1/like/d")
	require.Equal(t, 429, status, "a like is held to the same bound")
	for _, v := range []string{"a", "b", "c", "a"} {
		status, _ := sendBeacon(t, app, "/s1/view/"+v)
		require.Equal(t, 204, status, "visitors the session introduced stay welcome")
	}
	status, _ = sendBeacon(t, app, "/s2/like/d")
	require.Equal(t, 204, status, "another session has its own bound")
}

func TestSessionViewsAreBounded(t *testing.T) {
	cfg := config.DefaultRateLimits
	cfg.Views = ratelimit.Limit{Quota: 4, Window: time.Minute}
	app := beaconApp(cfg)
	for range 4 {
		status, body := sendBeacon(t, app, "/s1/view/a")
		require.Equal(t, 204, status, body)
	}
	status, body := sendBeacon(t, app, "/s1/view/a")
	require.Equal(t, 429, status)
	require.Contains(t, body, `"policy":"views"`)
	status, _ = sendBeacon(t, app, "/s1/like/a")
	require.Equal(t, 204, status, "likes are not views")
	// A view refused by the views bound introduces no visitor.
	status, _ = sendBeacon(t, app, "/s1/view/new")
	require.Equal(t, 429, status)
}

func TestBeaconBoundsOff(t *testing.T) {
	cfg := config.DefaultRateLimits
	cfg.Enabled = false
	app := beaconApp(cfg)
	for i := range 50 {
		status, _ := sendBeacon(t, app, "/s1/view/"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		require.Equal(t, 204, status)
	}
}
