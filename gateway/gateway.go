// Package gateway is splathost's only public HTTP surface. It authenticates every request
// (secret + public key, secret bearer, session bearer or an embed page's session token, admin
// token), applies CORS, request ids,
// tracing and the error envelope, and routes each path to its service: mounted in the same
// process, or forwarded over keep-alive HTTP with the caller signed into a header. It holds no
// business rules.
package gateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
)

// SessionVerifier turns a session bearer token into a caller. The session service provides it;
// until one is configured every session bearer is rejected.
type SessionVerifier interface {
	VerifySession(ctx context.Context, token string) (*httpx.Caller, error)
}

// Upstream is one service behind the gateway: either Register (same process) or URL (another
// process) is set.
type Upstream struct {
	Name     string
	Prefixes []string
	// Public are prefixes anyone may request (the asset route): no authentication, the CORS
	// policy of corsPublic, and, when forwarded, no caller and the answer streamed.
	Public []string
	// Upgrade are WebSocket routes among the prefixes (the multiplayer room): authenticated by
	// the session token in their URL (?session=, like the embed pages: a browser cannot set
	// Authorization on a WebSocket) and, when forwarded, tunnelled to the service (tunnel.go).
	// A refused token is answered the way a browser's WebSocket can see: upgraded, then closed
	// with 4401 (httpx.RefuseUpgrade).
	Upgrade  []string
	Register func(fiber.Router)
	URL      string
}

// Options configures the gateway.
type Options struct {
	Log            *slog.Logger
	BodyLimit      int
	AdminToken     string
	InternalSecret []byte
	Integrations   *credentials.Cache
	Sessions       SessionVerifier
	Upstreams      []Upstream
	// Assets is the built web tree (package web's Dist): /embed/assets/*, /sdk/* and the API
	// reference page (/docs, /docs/assets/*) are served from it. Nil serves none of them;
	// /openapi.yaml is served either way.
	Assets fs.FS
	// Ready are extra readiness checks (the dependencies of in-process services).
	Ready map[string]httpx.Check
	// Idempotency keeps the Idempotency-Key answers of IdempotentRoutes. Nil ignores the header.
	Idempotency *idempotency.Store
	// RequestBudget bounds the work of a request that changes something (httpx.Deadline); zero
	// is httpx.RequestBudget. In one process it is the services' budget too.
	RequestBudget time.Duration
	// Pprof serves Go's profiles behind the admin token (config.Config.Pprof).
	Pprof bool
	// RateLimits limits requests per integration, session and client address (ratelimit.go).
	// Nil limits nothing.
	RateLimits *RateLimits
}

// IdempotentRoutes are the routes that honour Idempotency-Key (contract item 13): those that
// create or change things and that a client retries after a lost answer. The protocol runs here,
// in front of every service, so that a key is one key whichever process serves the request.
var IdempotentRoutes = []IdempotentRoute{
	{Method: fiber.MethodPost, Pattern: "/api/v1/splats"},
	{Method: fiber.MethodPost, Pattern: "/api/v1/uploads/splat-file"},
	{Method: fiber.MethodPost, Pattern: "/api/v1/uploads/lod-folder"},
	{Method: fiber.MethodPost, Pattern: "/api/v1/uploads/splat-images"},
	{Method: fiber.MethodPost, Pattern: "/api/v1/splats/*/clone"},
	{Method: fiber.MethodPut, Pattern: "/api/v1/external-user"},
	{Method: fiber.MethodDelete, Pattern: "/api/v1/external-user"},
	{Method: fiber.MethodPost, Pattern: "/api/v1/webhooks"},
}

// corsAPI is the interface's CORS policy for /api/v1/*.
var corsAPI = cors.New(cors.Config{
	AllowOrigins:  "*",
	AllowMethods:  "GET,POST,PUT,PATCH,DELETE,OPTIONS",
	AllowHeaders:  "Authorization,X-Service-Public-Key,X-Service-External-User-Id,Content-Type",
	ExposeHeaders: exposedLimitHeaders,
})

// New builds the gateway app.
func New(o Options) (*fiber.App, error) {
	app := httpx.NewApp("gateway", o.Log, o.BodyLimit, o.RequestBudget)
	// Before any route: a request every reader does not frame the same way (framing.go), or a
	// path every reader does not read the same way (canonical.go), is refused.
	app.Use(guardFraming(app))
	app.Use(canonicalPaths)
	a := &auth{opts: o, adminHash: sha256.Sum256([]byte(o.AdminToken)), upgrades: map[string]bool{}}
	for _, up := range o.Upstreams {
		for _, p := range up.Upgrade {
			a.upgrades[p] = true
		}
	}

	checks := map[string]httpx.Check{"postgres": func(ctx context.Context) error {
		if !o.Integrations.Live() {
			return errListenerDown
		}
		return nil
	}}
	for name, check := range o.Ready {
		checks[name] = check
	}
	for _, up := range o.Upstreams {
		if up.URL != "" {
			checks[up.Name] = upstreamReady(up.URL)
		}
	}
	httpx.MountHealth(app, o.Log, checks)
	// The gateway's port is public: its metrics need the operator's admin token.
	httpx.MountMetrics(app, a.admin, o.Pprof)

	// A caller identity only ever comes from this gateway's own authentication.
	app.Use(func(c *fiber.Ctx) error {
		c.Request().Header.Del(httpx.CallerHeader)
		return c.Next()
	})
	app.Use(o.RateLimits.Handle)
	api := []any{"/api/v1", corsAPI, a.keys, o.RateLimits.Scoped}
	if o.Idempotency != nil {
		api = append(api, newKeyMiddleware(o.Idempotency, o.Log, IdempotentRoutes).Handle)
	}
	app.Use(api...)
	app.Use("/api/editor/embed-sessions", a.secretBearer, o.RateLimits.Scoped)
	app.Use("/api/embed", a.sessionBearer, o.RateLimits.Scoped)
	for _, page := range EmbedPages {
		app.Use(page, httpx.Page, a.sessionPage)
	}
	app.Use("/admin", a.admin)
	for _, up := range o.Upstreams {
		for _, p := range up.Public {
			app.Use(strings.TrimSuffix(p, "/"), corsPublic)
		}
	}

	if o.Assets != nil {
		if err := mountStatic(app, o.Assets); err != nil {
			return nil, err
		}
	}
	if err := mountDocs(app, o.Assets); err != nil {
		return nil, err
	}

	var routes []prefixRoute
	for _, up := range o.Upstreams {
		if up.Register != nil {
			up.Register(app)
			continue
		}
		fwd, err := newForwarder(up.Name, up.URL, o.InternalSecret, o.Log)
		if err != nil {
			return nil, err
		}
		if len(up.Upgrade) > 0 {
			// Before the prefix routes, which would forward the upgrade as a plain request.
			tun, err := newTunnel(up.Name, up.URL, o.InternalSecret, o.Log)
			if err != nil {
				return nil, err
			}
			for _, p := range up.Upgrade {
				app.Get(p, tun.handle)
			}
		}
		for _, p := range up.Prefixes {
			routes = append(routes, prefixRoute{prefix: strings.TrimSuffix(p, "/"), fwd: fwd})
		}
		if len(up.Public) > 0 {
			st, err := newStreamer(up.URL)
			if err != nil {
				return nil, err
			}
			for _, p := range up.Public {
				app.All(strings.TrimSuffix(p, "/")+"/*", st.handle)
			}
		}
	}
	// Fiber matches routes in registration order, so a prefix nested in another service's
	// (/api/embed/editor of the scene service inside /api/embed of the session service) must be
	// registered first, whatever the order of the upstreams: longest prefix first.
	slices.SortStableFunc(routes, func(a, b prefixRoute) int { return cmp.Compare(len(b.prefix), len(a.prefix)) })
	for _, r := range routes {
		app.All(r.prefix, r.fwd.handle)
		app.All(r.prefix+"/*", r.fwd.handle)
	}
	app.Use(httpx.Fallback(app))
	return app, nil
}

// prefixRoute is one path prefix forwarded to a service in another process.
type prefixRoute struct {
	prefix string
	fwd    *forwarder
}

// EmbedPages are the embed pages, authenticated by the session token in their URL (?session=).
var EmbedPages = []string{"/embed/viewer", "/embed/editor"}

type auth struct {
	opts      Options
	adminHash [32]byte
	// upgrades are the WebSocket routes (Upstream.Upgrade), authenticated by ?session=.
	upgrades map[string]bool
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(c *fiber.Ctx) (string, bool) {
	h := c.Get(fiber.HeaderAuthorization)
	if len(h) < 8 || !strings.EqualFold(h[:7], "bearer ") {
		return "", false
	}
	tok := strings.TrimSpace(h[7:])
	return tok, tok != ""
}

func (a *auth) keys(c *fiber.Ctx) error {
	secret, ok := bearer(c)
	if !ok || !strings.HasPrefix(secret, credentials.SecretKeyPrefix) {
		return apperr.Unauthorized("missing or invalid Authorization header: expected Bearer <secret key>")
	}
	pk := c.Get(httpx.PublicKeyHeader)
	if pk == "" {
		return apperr.Unauthorized("missing " + httpx.PublicKeyHeader + " header")
	}
	in, err := a.opts.Integrations.Authenticate(c.UserContext(), pk, secret)
	if err != nil {
		return err
	}
	if !in.RestAccess {
		return apperr.Forbidden("REST API access is disabled for this integration")
	}
	caller := callerOf(in, httpx.SchemeKey)
	if err := a.admit(c, caller); err != nil {
		return err
	}
	// A customer's status, which sessions scoped to them check at every use, changes only here:
	// forget it before answering, so the integrator's next call through this gateway sees it.
	if caller.HasExternalUser && c.Path() == "/api/v1/external-user" && success(c) &&
		(c.Method() == fiber.MethodPut || c.Method() == fiber.MethodDelete) {
		a.opts.Integrations.DropCustomer(caller.IntegrationID, caller.ExternalUserID)
	}
	return nil
}

func (a *auth) secretBearer(c *fiber.Ctx) error {
	secret, ok := bearer(c)
	if !ok || !strings.HasPrefix(secret, credentials.SecretKeyPrefix) {
		return apperr.Unauthorized("missing or invalid Authorization header: expected Bearer <secret key>")
	}
	in, err := a.opts.Integrations.AuthenticateSecret(c.UserContext(), secret)
	if err != nil {
		return err
	}
	return a.admit(c, callerOf(in, httpx.SchemeSecret))
}

func (a *auth) sessionBearer(c *fiber.Ctx) error {
	if a.upgrades[c.Path()] {
		return a.sessionUpgrade(c)
	}
	tok, ok := bearer(c)
	if !ok {
		return apperr.Unauthorized("missing Authorization header: expected Bearer <session token>")
	}
	return a.admitSession(c, tok)
}

// sessionPage authenticates an embed page by its ?session= token, with the same checks as a
// session bearer (an iframe's URL is the only credential a page load can carry).
func (a *auth) sessionPage(c *fiber.Ctx) error {
	tok := strings.TrimSpace(c.Query("session"))
	if tok == "" {
		return apperr.Unauthorized("this embed needs a session: the URL has no session token")
	}
	return a.admitSession(c, tok)
}

// sessionUpgrade authenticates a WebSocket route by its ?session= token, with the same checks
// as a session bearer. A refusal reaches a browser only as a close code: the request is
// upgraded and closed with 4401 (4410 for a revoked integration), which the room's client
// tells from a failure worth retrying.
func (a *auth) sessionUpgrade(c *fiber.Ctx) error {
	if err := httpx.RequireUpgrade(c); err != nil {
		return err
	}
	tok := strings.TrimSpace(c.Query("session"))
	if tok == "" {
		return httpx.RefuseUpgrade(c, apperr.Unauthorized("missing session token: connect with ?session=<session token>"))
	}
	caller, err := a.verifySession(c, tok)
	if err != nil {
		if apperr.From(err).Status >= 500 {
			a.opts.Log.ErrorContext(c.UserContext(), "session verification failed", "error", err, "requestId", httpx.RequestID(c))
		}
		return httpx.RefuseUpgrade(c, err)
	}
	return a.next(c, caller)
}

// verifySession verifies a session token.
func (a *auth) verifySession(c *fiber.Ctx, tok string) (*httpx.Caller, error) {
	if a.opts.Sessions == nil {
		return nil, apperr.Unauthorized("invalid session token")
	}
	return a.opts.Sessions.VerifySession(c.UserContext(), tok)
}

// admitSession verifies a session token and hands the request on with its caller.
func (a *auth) admitSession(c *fiber.Ctx, tok string) error {
	caller, err := a.verifySession(c, tok)
	if err != nil {
		return err
	}
	return a.next(c, caller)
}

// next hands a session's request on with its caller.
func (a *auth) next(c *fiber.Ctx, caller *httpx.Caller) error {
	// The session alone says who is calling: its customer scope comes from the signed token, so
	// an EU header from the embed's page must not widen it, and a login cookie sent along never
	// counts (spec: when a session bearer and a studio login cookie both arrive, the bearer wins).
	c.Request().Header.Del(httpx.ExternalUserHeader)
	c.Request().Header.Del(fiber.HeaderCookie)
	httpx.SetCaller(c, caller)
	return c.Next()
}

func (a *auth) admin(c *fiber.Ctx) error {
	tok, ok := bearer(c)
	got := sha256.Sum256([]byte(tok))
	if !ok || subtle.ConstantTimeCompare(got[:], a.adminHash[:]) != 1 {
		return apperr.Unauthorized("missing or invalid admin token")
	}
	httpx.SetCaller(c, &httpx.Caller{Scheme: httpx.SchemeAdmin})
	if err := c.Next(); err != nil {
		return err
	}
	// Read-your-writes for revocation and rotation: the service that made the change told every
	// process over NOTIFY, but this gateway (which may be another process) must not answer the
	// operator before its own cache forgot the old state.
	if c.Method() != fiber.MethodGet && strings.HasPrefix(c.Path(), "/admin/v1/integrations/") && success(c) {
		a.opts.Integrations.Flush()
	}
	return nil
}

// success reports whether the response so far is a 2xx.
func success(c *fiber.Ctx) bool {
	status := c.Response().StatusCode()
	return status >= 200 && status < 300
}

// admit validates the EU header and hands the request on with its caller.
func (a *auth) admit(c *fiber.Ctx, caller *httpx.Caller) error {
	if raw := c.Request().Header.Peek(httpx.ExternalUserHeader); len(raw) > 0 {
		eu := string(raw)
		if problem := externalUserProblem(eu); problem != "" {
			return apperr.Invalid("invalid "+httpx.ExternalUserHeader+" header", httpx.ExternalUserHeader+": "+problem)
		}
		caller.ExternalUserID, caller.HasExternalUser = eu, true
	}
	httpx.SetCaller(c, caller)
	return c.Next()
}

// externalUserProblem applies the interface's EU rule: up to 256 characters, no line breaks
// (nor any other control character, which no opaque id needs).
func externalUserProblem(eu string) string {
	n := len(eu)
	if utf8.ValidString(eu) {
		n = utf8.RuneCountInString(eu)
	}
	if n > 256 {
		return "must be at most 256 characters"
	}
	for i := 0; i < len(eu); i++ {
		if eu[i] < 0x20 || eu[i] == 0x7f {
			return "must not contain line breaks or control characters"
		}
	}
	for _, r := range eu {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return "must not contain line breaks or control characters"
		}
	}
	if strings.TrimSpace(eu) == "" {
		return "must not be blank"
	}
	return ""
}

func callerOf(in *credentials.Integration, scheme httpx.Scheme) *httpx.Caller {
	return &httpx.Caller{
		Scheme: scheme, IntegrationID: in.ID, AccountID: in.AccountID, ProductSlug: in.ProductSlug,
		PublicKey: in.PublicKey, Capabilities: in.Capabilities, Plan: in.Plan,
	}
}
