package scene

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/sync/singleflight"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	splathost "github.com/splathost/splathost/sdk/go"
)

// Trending bounds (spec, Limits).
const (
	defaultTrendingWindow = 7
	maxTrendingWindow     = 90
	defaultTrendingLimit  = 12
	maxTrendingLimit      = 100
	// trendingChunk is how many ranked candidates are checked for eligibility per query.
	trendingChunk = 200
	// scoreTTL is how long an integration's window scores are reused. A burst of trending calls
	// then costs one ClickHouse query, and a view still shows in trending well within the
	// contract's 10 s.
	scoreTTL = 2 * time.Second
	// precomputedMaxAge is how old a precomputed window (analytics.Precomputed) may be for a
	// request to use it instead of ranking the window itself; the process reuses it no longer
	// than that either. With the streamer's lag (about a second) and ClickHouse's whole-second
	// clock, a view shows in trending within about 7 s (contract: 10 s). Refreshes every 2 s
	// that each take up to 2-3 s on a loaded machine stay within it.
	precomputedMaxAge = 5 * time.Second
	// precomputedTop is how many of a precomputed window's best scenes a request reads (the
	// window's top list, one ClickHouse row): enough to fill the largest limit when most of
	// them are eligible. When they do not settle the ranking, the request reads the whole window.
	precomputedTop = analytics.TopKept
	// wantEvery is how often a process tells the streamer's leader that a window is still asked
	// for (analytics.Views.Want); well within analytics.DemandFor.
	wantEvery = time.Minute
	// wantTimeout bounds one announcement; it runs beside the request, not in its way.
	wantTimeout = 15 * time.Second
	// maxCachedScores bounds the cached (integration, window) entries.
	maxCachedScores = 10_000
)

// scoreCache holds recent window scores by integration and window, lets concurrent misses of
// one key share a single ClickHouse query, and remembers when each window was last announced
// as wanted.
type scoreCache struct {
	mu      sync.Mutex
	entries map[string]scoreEntry
	wanted  map[string]time.Time
	group   singleflight.Group
}

type scoreEntry struct {
	list  windowList
	until time.Time
}

// windowList is a window's scores, best first: every active scene's, or (complete false) only
// the best ones.
type windowList struct {
	scores   []analytics.Score
	complete bool
}

// get returns the scores of key, loading them when the cached copy is missing or expired. load
// returns the scores and how long they may be reused (at most scoreTTL).
func (c *scoreCache) get(key string, now time.Time, load func() (windowList, time.Duration, error)) (windowList, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.list, nil
	}
	v, err, _ := c.group.Do(key, func() (any, error) {
		list, ttl, err := load()
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.entries == nil || len(c.entries) >= maxCachedScores {
			c.entries = map[string]scoreEntry{} // expired entries are never read again: start over
		}
		c.entries[key] = scoreEntry{list: list, until: now.Add(min(ttl, scoreTTL))}
		return list, nil
	})
	if err != nil {
		return windowList{}, err
	}
	return v.(windowList), nil
}

// shouldWant reports whether key's window is due to be announced as wanted, and if so counts it
// as announced at now.
func (c *scoreCache) shouldWant(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.wanted[key]; ok && now.Sub(at) < wantEvery {
		return false
	}
	if c.wanted == nil || len(c.wanted) >= maxCachedScores {
		c.wanted = map[string]time.Time{}
	}
	c.wanted[key] = now
	return true
}

// errScoresUnavailable marks a window ranking that could not be read from ClickHouse; trending
// then answers with the all-time ranking from Postgres.
var errScoresUnavailable = errors.New("trending window scores unavailable")

// ClickHouse outage handling for trending.
const (
	// scoresTimeout bounds the window-score query: it takes milliseconds when ClickHouse is
	// healthy, and a frozen server must not hold trending calls for the driver's 30 s.
	scoresTimeout = 3 * time.Second
	// scoresRetryAfter is how long after a failed score query trending skips ClickHouse and
	// answers from Postgres at once, so an outage does not cost every call the timeout.
	scoresRetryAfter = 2 * time.Second
)

// Trending item sources.
const (
	sourceWindow  = "window"
	sourceAllTime = "alltime"
)

// UseViews gives the service the ClickHouse view store trending ranks from. Without one,
// GET /api/v1/splats/trending answers 503.
func (s *Service) UseViews(v *analytics.Views) { s.views = v }

// unwant forgets that key's window was announced, after an announcement failed.
func (c *scoreCache) unwant(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.wanted, key)
}

// parseTrendingParam reads an optional integer query parameter within [min, max]. Anything else
// — empty, a fraction, an exponent, a sign-less word — is the spec's 400.
func parseTrendingParam(args *fiber.Ctx, name string, def, min, max int, issues *[]string) int {
	qa := args.Context().QueryArgs()
	if !qa.Has(name) {
		return def
	}
	n, err := strconv.Atoi(string(qa.Peek(name)))
	if err != nil || n < min || n > max {
		*issues = append(*issues, name+": must be an integer from "+strconv.Itoa(min)+" to "+strconv.Itoa(max))
		return def
	}
	return n
}

// trendingSince is the UTC midnight the window starts at: the day of now − window days.
func trendingSince(now time.Time, window int) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -window)
}

// ranked is an eligible scene with its window score.
type ranked struct {
	sc    *ent.Scene
	score analytics.Score
}

// windowScores returns the window's best top scores (every one when top is 0) and how long
// they may be reused: the precomputed window when the streamer's leader refreshed it within
// precomputedMaxAge (reused until it is that old), else every score of the window ranked
// afresh. It also tells the leader, once in a while, that the window is wanted, so the next
// requests find it precomputed.
func (s *Service) windowScores(ctx context.Context, integrationID string, window int, since time.Time, top int) (windowList, time.Duration, error) {
	key := integrationID + "|" + strconv.Itoa(window)
	if s.scores.shouldWant(key, time.Now()) {
		go func() {
			// Not tied to the request: the announcement outlives it, and a failure only means
			// the window is ranked afresh a while longer.
			wctx, cancel := context.WithTimeout(context.Background(), wantTimeout)
			defer cancel()
			if err := s.views.Want(wctx, integrationID, window); err != nil {
				s.scores.unwant(key) // the next request tries again
				s.log.Warn("trending: could not announce a wanted window; it is ranked afresh meanwhile",
					"integrationId", integrationID, "window", window, "error", err)
			}
		}()
	}
	scores, complete, age, ok, err := s.views.Precomputed(ctx, integrationID, since, top)
	if err == nil && ok && age <= precomputedMaxAge {
		return windowList{scores: scores, complete: complete}, precomputedMaxAge - age, nil
	}
	if err != nil && ctx.Err() != nil {
		return windowList{}, 0, err
	}
	scores, err = s.views.WindowScores(ctx, integrationID, since)
	return windowList{scores: scores, complete: true}, scoreTTL, err
}

// rankLess orders by score, then all-time likes, then all-time views (spec), then id so the
// order is total.
func rankLess(a, b ranked) int {
	switch {
	case a.score.Value() != b.score.Value():
		return cmpDesc(a.score.Value(), b.score.Value())
	case a.sc.LikeCount != b.sc.LikeCount:
		return cmpDesc(a.sc.LikeCount, b.sc.LikeCount)
	case a.sc.ViewCount != b.sc.ViewCount:
		return cmpDesc(a.sc.ViewCount, b.sc.ViewCount)
	case a.sc.ID < b.sc.ID:
		return -1
	case a.sc.ID > b.sc.ID:
		return 1
	}
	return 0
}

func cmpDesc(a, b int64) int {
	if a > b {
		return -1
	}
	return 1
}

// trending answers GET /api/v1/splats/trending: the integration's eligible scenes ranked by
// uniqueViews × 3 + impressions over the window (ClickHouse daily rollup), ties broken by
// all-time likes then views, backfilled with the all-time most viewed eligible scenes when
// fewer than limit had activity.
func (s *Service) trending(c *fiber.Ctx) error {
	caller, err := httpx.KeyCaller(c)
	if err != nil {
		return err
	}
	var issues []string
	window := parseTrendingParam(c, "window", defaultTrendingWindow, 1, maxTrendingWindow, &issues)
	limit := parseTrendingParam(c, "limit", defaultTrendingLimit, 1, maxTrendingLimit, &issues)
	if len(issues) > 0 {
		return apperr.Invalid("invalid query parameters", issues...)
	}
	if s.views == nil {
		return apperr.New(fiber.StatusServiceUnavailable, "trending is unavailable, retry with backoff")
	}
	since := trendingSince(s.now(), window)
	items, windowCount, err := s.trendingItems(c.UserContext(), caller, window, since, limit)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "splats": items, "trending": splathost.TrendingInfo{
		WindowDays: window, Since: httpx.ISOTime(since), Count: len(items), WindowCount: windowCount,
	}})
}

// trendingItems are the best limit eligible scenes of the window as trending items, and how
// many of them come from the window's ranking; the rest are the all-time backfill.
func (s *Service) trendingItems(ctx context.Context, caller *httpx.Caller, window int, since time.Time, limit int) ([]splathost.TrendingSplat, int, error) {
	top, err := s.rankWindow(ctx, caller.IntegrationID, window, since, limit)
	if errors.Is(err, errScoresUnavailable) {
		// ClickHouse is down or too slow: the ranking degrades to the all-time backfill (every
		// item's trending.source says "alltime", windowCount is 0) instead of failing the call.
		top, err = nil, nil
	}
	if err != nil {
		return nil, 0, apperr.Internal(err)
	}
	items := make([]splathost.TrendingSplat, 0, limit)
	eu := callerEU(caller)
	taken := make([]string, 0, len(top))
	for _, r := range top {
		items = append(items, splathost.TrendingSplat{Splat: s.itemOf(r.sc, ownerEUOf(r.sc), caller.ProductSlug, eu),
			Trending: splathost.TrendingScore{Source: sourceWindow, Score: r.score.Value(), Impressions: r.score.Impressions, UniqueViews: r.score.UniqueViews}})
		taken = append(taken, r.sc.ID)
	}
	windowCount := len(items)
	if len(items) < limit {
		rest, err := s.scenes.MostViewed(ctx, caller.IntegrationID, taken, limit-len(items))
		if err != nil {
			return nil, 0, apperr.Internal(err)
		}
		for _, sc := range rest {
			items = append(items, splathost.TrendingSplat{Splat: s.itemOf(sc, ownerEUOf(sc), caller.ProductSlug, eu),
				Trending: splathost.TrendingScore{Source: sourceAllTime}})
		}
	}
	return items, windowCount, nil
}

// rankWindow returns the best limit eligible scenes with activity since the given day (window
// days before today), from the window's scores (cached for up to scoreTTL).
func (s *Service) rankWindow(ctx context.Context, integrationID string, window int, since time.Time, limit int) ([]ranked, error) {
	key := integrationID + "|" + since.Format(time.DateOnly)
	if until := s.scoresDownUntil.Load(); until != 0 && time.Now().UnixNano() < until {
		return nil, fmt.Errorf("%w: failed less than %s ago", errScoresUnavailable, scoresRetryAfter)
	}
	load := func(top int) func() (windowList, time.Duration, error) {
		return func() (windowList, time.Duration, error) {
			qctx, cancel := context.WithTimeout(ctx, scoresTimeout)
			defer cancel()
			return s.windowScores(qctx, integrationID, window, since, top)
		}
	}
	list, err := s.scores.get(key, s.now(), load(precomputedTop))
	var got []ranked
	settled := false
	if err == nil {
		got, settled, err = s.eligibleTop(ctx, integrationID, list.scores, limit)
	}
	if err == nil && !settled && !list.complete {
		// The best precomputedTop candidates did not settle it (too many not eligible, or a tie
		// at the cut): rank from every scene of the window.
		if list, _, err = load(0)(); err == nil {
			got, _, err = s.eligibleTop(ctx, integrationID, list.scores, limit)
		}
	}
	if err != nil && ctx.Err() != nil {
		return nil, err // the caller went away: says nothing about ClickHouse
	}
	if err != nil {
		// Logged once per failed query, not for the calls answered during the pause after it.
		s.log.Warn("trending: window scores unavailable; answering with the all-time ranking",
			"integrationId", integrationID, "retryAfter", scoresRetryAfter.String(), "error", err)
		s.scoresDownUntil.Store(time.Now().Add(scoresRetryAfter).UnixNano())
		return nil, fmt.Errorf("%w: %w", errScoresUnavailable, err)
	}
	return got, nil
}

// eligibleTop returns the best limit eligible scenes among scores (best first). Their scenes
// are checked for eligibility a chunk at a time, stopping once limit are in hand and no later
// candidate can tie the last of them (ties are decided by likes and views, which only Postgres
// knows). settled says that no scene ranked after the last of scores could change the answer.
func (s *Service) eligibleTop(ctx context.Context, integrationID string, scores []analytics.Score, limit int) (got []ranked, settled bool, err error) {
	// cut: limit are in hand and a candidate scoring v cannot tie the last of them.
	cut := func(v int64) bool { return len(got) >= limit && v < got[limit-1].score.Value() }
	// The first query asks for a few more than limit (nearly always enough: most scenes with
	// views are eligible); the later ones for trendingChunk each.
	size := min(trendingChunk, max(2*limit, 32))
	for start := 0; start < len(scores); start, size = start+size, trendingChunk {
		if cut(scores[start].Value()) {
			break
		}
		chunk := scores[start:min(start+size, len(scores))]
		byID := make(map[string]analytics.Score, len(chunk))
		ids := make([]string, len(chunk))
		for i, sc := range chunk {
			byID[sc.SceneID], ids[i] = sc, sc.SceneID
		}
		rows, err := s.scenes.TrendingAmong(ctx, integrationID, ids)
		if err != nil {
			return nil, false, err
		}
		for _, sc := range rows {
			got = append(got, ranked{sc: sc, score: byID[sc.ID]})
		}
		slices.SortFunc(got, rankLess)
	}
	// A scene ranked after the last of scores scores at most as much as it.
	settled = len(scores) > 0 && cut(scores[len(scores)-1].Value())
	if len(got) > limit {
		got = got[:limit]
	}
	return got, settled, nil
}
