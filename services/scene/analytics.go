package scene

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	splathost "github.com/splathost/splathost/sdk/go"
)

// Scene analytics (contract item 16): a window of 1-90 UTC days, today included and last.
const (
	defaultAnalyticsWindow = 30
	maxAnalyticsWindow     = 90
	// analyticsWait bounds the ClickHouse queries of one request.
	analyticsWait = 5 * time.Second
)

// getAnalytics answers GET /api/v1/splats/{id}/analytics?window=1-90: the scene's impressions and
// unique viewers per UTC day of the window (zeros included, today last) and over the window,
// from the ClickHouse daily rollup. Scoped exactly like GET scene (404 never says more).
func (s *Service) getAnalytics(c *fiber.Ctx) error {
	var issues []string
	window := parseTrendingParam(c, "window", defaultAnalyticsWindow, 1, maxAnalyticsWindow, &issues)
	if len(issues) > 0 {
		return apperr.Invalid("invalid query parameters", issues...)
	}
	caller, sc, err := s.visibleScene(c)
	if err != nil {
		return err
	}
	if s.views == nil {
		return apperr.New(fiber.StatusServiceUnavailable, "analytics are unavailable, retry with backoff")
	}
	// The window's first day: today is its last, so window days end today.
	since := trendingSince(s.now(), window-1)
	ctx, cancel := context.WithTimeout(c.UserContext(), analyticsWait)
	defer cancel()
	days, total, err := s.views.SceneWindow(ctx, caller.IntegrationID, sc.ID, since)
	if err != nil {
		s.log.WarnContext(ctx, "scene analytics unavailable", "error", err, "requestId", httpx.RequestID(c))
		return apperr.New(fiber.StatusServiceUnavailable, "analytics are unavailable, retry with backoff")
	}
	return c.JSON(fiber.Map{"status": "success", "analytics": analyticsOf(sc.ID, window, since, days, total.Impressions, total.UniqueViews)})
}

// analyticsOf fills every day of the window from since, zeros where the rollup has no row.
// The answer is the SDK's Analytics, the type its clients decode.
func analyticsOf(id string, window int, since time.Time, days []analytics.SceneDay, impressions, unique int64) splathost.Analytics {
	byDate := make(map[string]analytics.SceneDay, len(days))
	for _, d := range days {
		byDate[d.Day.UTC().Format(time.DateOnly)] = d
	}
	out := splathost.Analytics{SplatID: id, WindowDays: window, Since: httpx.ISOTime(since),
		Totals: splathost.ViewCounts{Impressions: impressions, UniqueViews: unique}, Days: make([]splathost.AnalyticsDay, window)}
	for i := range window {
		date := since.AddDate(0, 0, i).Format(time.DateOnly)
		d := byDate[date]
		out.Days[i] = splathost.AnalyticsDay{Date: date, ViewCounts: splathost.ViewCounts{Impressions: d.Impressions, UniqueViews: d.UniqueViews}}
	}
	return out
}
