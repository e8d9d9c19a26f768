package session

import (
	"crypto/sha256"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ratelimit"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// beaconLimits bound what one embed session can count in likes and views (docs/security.md,
// "Rate limits"). A visitorId is whatever the embed's page sends, so without a bound one session
// could invent visitors and raise a scene's likeCount and uniqueViews at will; with it, a
// session introduces at most Visitors.Quota new visitorIds per window (the first ones at once,
// then one per Window/Quota), and records at most Views.Quota views per window. A real viewer
// is one browser, one visitorId, one view per scene load: far below both.
//
// A like or a view refused by a bound answers 429 RATE_LIMITED (with Retry-After and the
// RateLimit fields) and counts nothing. The state is this process's memory: a session's
// requests reach the session service replica of its integration (the gateways route by
// integration), so it is one session's state unless that replica fails over.
type beaconLimits struct {
	visitors, views ratelimit.Limit
	// visitorPolicy and viewPolicy are the RateLimit-Policy items of the two bounds.
	visitorPolicy, viewPolicy string
	// known holds, per session and visitorId (visitorKey), that the visitor was introduced: a
	// limit of one per session lifetime, so a known visitor peeks as refused.
	known *ratelimit.Limiter[[16]byte]
	// introduced and viewed are the two bounds' buckets, by session id.
	introduced, viewed *ratelimit.Limiter[string]
}

// Policy names of the beacon bounds.
const (
	policyVisitors = "visitors"
	policyViews    = "views"
)

// knownFor is how long a session remembers a visitor it introduced: the session's lifetime,
// after which its token is no longer accepted anyway.
var knownFor = ratelimit.Limit{Quota: 1, Window: sessiontoken.Lifetime}

// Key budgets: about 40 bytes a known visitor and 70 a session, so at most about 15 MiB with
// every budget full.
const (
	maxKnownVisitors = 200_000
	maxBeaconSession = 50_000
)

// UseBeaconLimits turns on the bounds of likes and views per session (off until called, and
// with limits that are off or disabled).
func (s *Service) UseBeaconLimits(cfg config.RateLimits) {
	if !cfg.Enabled || (cfg.Visitors.Off() && cfg.Views.Off()) {
		s.beacons = nil
		return
	}
	s.beacons = &beaconLimits{
		visitors: cfg.Visitors, views: cfg.Views,
		visitorPolicy: policyItem(policyVisitors, cfg.Visitors), viewPolicy: policyItem(policyViews, cfg.Views),
		known:      ratelimit.New[[16]byte](maxKnownVisitors),
		introduced: ratelimit.New[string](maxBeaconSession), viewed: ratelimit.New[string](maxBeaconSession),
	}
}

func policyItem(name string, lim ratelimit.Limit) string {
	if lim.Off() {
		return ""
	}
	return ratelimit.PolicyItem(name, lim)
}

// admit checks a like (view false) or a view of visitorID by the request's session, and charges
// it when it passes: a new visitor costs the session one introduction, a view one view. Nothing
// is charged for a refused beacon.
func (b *beaconLimits) admit(c *fiber.Ctx, visitorID string, view bool) error {
	if b == nil {
		return nil
	}
	sid := httpx.CallerOf(c).SessionKey()
	if sid == "" {
		return nil
	}
	key := visitorKey(sid, visitorID)
	isNew := !b.visitors.Off() && b.known.Peek(key, knownFor).Allowed
	if isNew {
		if d := b.introduced.Peek(sid, b.visitors); !d.Allowed {
			return httpx.RateLimited(c, b.visitorPolicy, policyVisitors, d)
		}
	}
	if view && !b.views.Off() {
		d := b.viewed.Take(sid, b.views)
		if !d.Allowed {
			return httpx.RateLimited(c, b.viewPolicy, policyViews, d)
		}
		httpx.SetRateLimit(c, b.viewPolicy, policyViews, d)
	}
	if isNew {
		b.introduced.Charge(sid, b.visitors)
		b.known.Charge(key, knownFor)
	}
	return nil
}

// visitorKey names a session's visitor in 16 bytes, whatever the length of the visitorId (up to
// 128 characters): SHA-256 of the two, cut.
func visitorKey(sid, visitorID string) [16]byte {
	h := sha256.New()
	h.Write([]byte(sid))
	h.Write([]byte{0})
	h.Write([]byte(visitorID))
	var sum [sha256.Size]byte
	var key [16]byte
	copy(key[:], h.Sum(sum[:0]))
	return key
}
