package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ratelimit"
)

// RateLimits is the gateway's rate limiting (docs/security.md, "Rate limits"), in three scopes:
//
//   - each integration on /api/v1 and the embed-session mint, by its account's plan, charged
//     when its keys verify (Scoped, after authentication);
//   - each embed session on /api/embed, likewise (Scoped);
//   - each client address on everything else a stranger can reach: the asset route, the embed
//     pages and static files, the API reference. There the outcome decides what a request costs,
//     after the answer (Handle): a failure (a 4xx but 429) charges the address's miss bucket, a
//     success its read bucket, which is far larger, so a viewer streaming thousands of LOD tiles
//     is never slowed while a stranger probing for assets or keys is stopped after about
//     Miss.Quota failures. Requests whose credentials did not verify (a 401 or 410 on /api/v1,
//     /api/embed or /admin) charge the miss bucket too: each costs a key lookup in Postgres.
//     An address out of misses is refused everything but requests whose credentials verify,
//     which stay limited by their own integration's or session's bucket alone (outOfMisses).
//
// The integration scope's buckets are shared by every gateway replica once Share is called (in
// Postgres, leased in batches: ratelimit.Shared), so a plan's limit holds across replicas. The
// other scopes are this process's memory: a session and a client address keep their keep-alive
// connections on one replica, so they get N times their limit only by opening connections to
// every replica.
type RateLimits struct {
	cfg atomic.Pointer[limitsConfig]
	api *ratelimit.Limiter[string]
	// shared, when set, limits integrations across replicas, with api as its fallback.
	shared  *ratelimit.Shared
	session *ratelimit.Limiter[string]
	miss    *ratelimit.Limiter[netip.Addr]
	read    *ratelimit.Limiter[netip.Addr]
}

// Key budgets of the limiters: past them the keys nearest to full are forgotten (a forgotten key
// starts again with a full bucket). About 60 bytes a key: at most about 20 MiB a gateway.
const (
	maxIntegrationKeys = 50_000
	maxSessionKeys     = 100_000
	maxAddressKeys     = 100_000
)

// Policy names of the RateLimit and RateLimit-Policy fields.
const (
	policyIntegration = "integration"
	policySession     = "session"
	policyMiss        = "miss"
	policyRead        = "read"
)

// limitsConfig is a configuration with the policy fields of its limits written once.
type limitsConfig struct {
	config.RateLimits
	// apiPolicy is the integration policy field of each plan: free, pro, enterprise.
	apiPolicy     [3]string
	sessionPolicy string
	addressPolicy string // miss and read together: both apply to every address-scoped request
}

// NewRateLimits returns the gateway's rate limiting with cfg.
func NewRateLimits(cfg config.RateLimits) *RateLimits {
	r := &RateLimits{
		api: ratelimit.New[string](maxIntegrationKeys), session: ratelimit.New[string](maxSessionKeys),
		miss: ratelimit.New[netip.Addr](maxAddressKeys), read: ratelimit.New[netip.Addr](maxAddressKeys),
	}
	r.Set(cfg)
	return r
}

// Share makes the integration scope's buckets those of leaser, which every gateway replica
// draws from, and gives back what this gateway holds unused until ctx ends. Called before the
// gateway serves.
func (r *RateLimits) Share(ctx context.Context, leaser ratelimit.Leaser, log *slog.Logger) {
	r.shared = ratelimit.NewShared(leaser, r.api, log)
	go r.shared.Run(ctx)
}

// Set replaces the limits; the buckets are kept. The e2e tests raise a limit for one test this
// way (the in-process gateway reads its configuration once per test binary).
func (r *RateLimits) Set(cfg config.RateLimits) {
	lc := &limitsConfig{RateLimits: cfg}
	for i, plan := range []string{"free", "pro", "enterprise"} {
		lc.apiPolicy[i] = policyField(policyIntegration, cfg.API(plan))
	}
	lc.sessionPolicy = policyField(policySession, cfg.Session)
	lc.addressPolicy = strings.Trim(policyField(policyMiss, cfg.Miss)+","+policyField(policyRead, cfg.Read), ",")
	r.cfg.Store(lc)
}

// Config is the limits in force.
func (r *RateLimits) Config() config.RateLimits { return r.cfg.Load().RateLimits }

// policyField is a RateLimit-Policy item, "" for a limit that is off.
func policyField(name string, lim ratelimit.Limit) string {
	if lim.Off() {
		return ""
	}
	return ratelimit.PolicyItem(name, lim)
}

// scope is which limit a path's requests fall under before authentication.
type scope int

const (
	// scopeAddress: routes anyone may request (assets, pages, static files, docs).
	scopeAddress scope = iota
	// scopeKeyed: routes behind keys or a session; Scoped limits them once those verify, and
	// the address pays for the requests whose credentials did not.
	scopeKeyed
)

// scopeOf classifies a request path.
func scopeOf(path string) scope {
	for _, p := range []string{"/api/", "/admin/"} {
		if strings.HasPrefix(path, p) {
			return scopeKeyed
		}
	}
	return scopeAddress
}

// Handle is the address scope, the first middleware after the health routes: it refuses an
// address that has used up its miss bucket (or, on the address-scoped routes, its read bucket)
// and charges the answer's outcome once it is known. A nil RateLimits lets everything through.
func (r *RateLimits) Handle(c *fiber.Ctx) error {
	if r == nil {
		return c.Next()
	}
	cfg := r.cfg.Load()
	// A CORS preflight costs nothing and, refused, would hide the real answer from the browser.
	if !cfg.Enabled || c.Method() == fiber.MethodOptions {
		return c.Next()
	}
	sc := scopeOf(c.Path())
	addr := cfg.client(c)
	d := r.miss.Peek(addr, cfg.Miss)
	if d.Allowed && sc == scopeAddress {
		if d = r.read.Peek(addr, cfg.Read); !d.Allowed {
			return cfg.refuse(c, cfg.addressPolicy, policyRead, d, sc)
		}
	}
	if !d.Allowed {
		if sc == scopeAddress || httpx.IsWebSocketUpgrade(c) {
			return cfg.refuse(c, cfg.addressPolicy, policyMiss, d, sc)
		}
		return cfg.outOfMisses(c, d)
	}
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		status = errStatus(err)
	}
	failed := status >= 400 && status < 500 && status != fiber.StatusTooManyRequests
	switch {
	case failed && (sc == scopeAddress || httpx.CallerOf(c) == nil):
		cfg.addressHeaders(c, policyMiss, r.miss.Charge(addr, cfg.Miss))
	case sc == scopeAddress:
		cfg.addressHeaders(c, policyRead, r.read.Charge(addr, cfg.Read))
	}
	return err
}

// outOfMisses serves a keyed request from an address that has used up its misses: the
// address's failures must not refuse the valid calls of an integrator who shares it (a cloud
// NAT's egress), so the request is authenticated, with keys the gateway does not know to exist
// taken as unknown without a lookup (credentials.KnownKeysOnly: the refusal costs no more than
// it did when it came first). Credentials that verify are served and limited by their own scope
// (Scoped); anything else is refused as before, and charges nothing more.
func (cfg *limitsConfig) outOfMisses(c *fiber.Ctx, d ratelimit.Decision) error {
	c.SetUserContext(credentials.KnownKeysOnly(c.UserContext()))
	err := c.Next()
	if httpx.CallerOf(c) == nil {
		return cfg.refuse(c, cfg.addressPolicy, policyMiss, d, scopeKeyed)
	}
	return err
}

// Scoped is the integration and session scopes, mounted right after authentication: it charges
// the caller's bucket and refuses a caller that has used it up. WebSocket upgrades are left to
// the room (one per session, with its own message limits).
func (r *RateLimits) Scoped(c *fiber.Ctx) error {
	if r == nil {
		return c.Next()
	}
	cfg := r.cfg.Load()
	caller := httpx.CallerOf(c)
	if !cfg.Enabled || caller == nil {
		return c.Next()
	}
	var d ratelimit.Decision
	var name, policy string
	if caller.Scheme == httpx.SchemeSession {
		sid := caller.SessionKey()
		if sid == "" || cfg.Session.Off() || httpx.IsWebSocketUpgrade(c) {
			return c.Next()
		}
		d, name, policy = r.session.Take(sid, cfg.Session), policySession, cfg.sessionPolicy
	} else {
		lim := cfg.API(caller.Plan)
		if lim.Off() {
			return c.Next()
		}
		switch caller.Plan {
		case "enterprise":
			policy = cfg.apiPolicy[2]
		case "pro":
			policy = cfg.apiPolicy[1]
		default:
			policy = cfg.apiPolicy[0]
		}
		name = policyIntegration
		if r.shared != nil {
			d = r.shared.Take(caller.IntegrationID, lim)
		} else {
			d = r.api.Take(caller.IntegrationID, lim)
		}
	}
	if !d.Allowed {
		return cfg.refuse(c, policy, name, d, scopeKeyed)
	}
	httpx.SetRateLimit(c, policy, name, d)
	return c.Next()
}

// addressHeaders writes the address scope's headers after the answer: the decision of the
// bucket the answer was charged to.
func (cfg *limitsConfig) addressHeaders(c *fiber.Ctx, name string, d ratelimit.Decision) {
	httpx.SetRateLimit(c, cfg.addressPolicy, name, d)
}

// refuse answers 429 RATE_LIMITED with Retry-After and the RateLimit fields. A refused page is
// an HTML error page like its other errors; a refusal on a CORS-enabled route can be read by
// the browser that was refused.
func (cfg *limitsConfig) refuse(c *fiber.Ctx, policy, name string, d ratelimit.Decision, sc scope) error {
	path := c.Path()
	for _, page := range EmbedPages {
		if path == page {
			httpx.MarkPage(c)
		}
	}
	if c.Get(fiber.HeaderOrigin) != "" && (sc == scopeAddress || strings.HasPrefix(path, "/api/v1")) {
		c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
		c.Set(fiber.HeaderAccessControlExposeHeaders, exposedLimitHeaders)
	}
	return httpx.RateLimited(c, policy, name, d)
}

// exposedLimitHeaders are the answer headers a cross-origin script may read about a limit.
const exposedLimitHeaders = ratelimit.RetryAfterHeader + "," + ratelimit.LimitHeader + "," + ratelimit.PolicyHeader + "," + httpx.RequestIDHeader

// errStatus is the status the error handler will answer err with.
func errStatus(err error) int {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Status
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return fiber.StatusInternalServerError
}

// client is the request's client address, the key of the address scope: the TCP peer, or, when
// the peer is a trusted proxy, the right-most address of X-Forwarded-For that is not one (the
// left-most entries are whatever the client wrote). An IPv6 client is its /64, the block one
// subscriber usually holds: its single addresses are free to pick.
func (cfg *limitsConfig) client(c *fiber.Ctx) netip.Addr {
	var peer netip.Addr
	if tcp, ok := c.Context().RemoteAddr().(*net.TCPAddr); ok {
		peer, _ = netip.AddrFromSlice(tcp.IP)
	}
	peer = peer.Unmap()
	if len(cfg.TrustedProxies) > 0 && trusted(cfg.TrustedProxies, peer) {
		xff := string(c.Request().Header.Peek(fiber.HeaderXForwardedFor))
		for xff != "" {
			var part string
			if i := strings.LastIndexByte(xff, ','); i >= 0 {
				xff, part = xff[:i], xff[i+1:]
			} else {
				xff, part = "", xff
			}
			a, err := netip.ParseAddr(strings.TrimSpace(part))
			if err != nil {
				break // a malformed hop: the last trusted proxy is the client we know
			}
			if peer = a.Unmap(); !trusted(cfg.TrustedProxies, peer) {
				break
			}
		}
	}
	if peer.Is6() {
		if p, err := peer.WithZone("").Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return peer
}

// trusted reports whether a is one of the trusted proxies.
func trusted(proxies []netip.Prefix, a netip.Addr) bool {
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
