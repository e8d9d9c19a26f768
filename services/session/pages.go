package session

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/integration"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// bootData is the page's boot JSON (docs/embeds.md, Pages): what the embed's script needs to
// start from the session alone.
type bootData struct {
	Kind         string    `json:"kind"`
	SessionToken string    `json:"sessionToken"`
	ExpiresAt    string    `json:"expiresAt"`
	SplatID      *string   `json:"splatId"`
	Scoped       bool      `json:"scoped"`
	Capabilities []string  `json:"capabilities"`
	User         *bootUser `json:"user"`
}

// bootUser is the end-user profile signed into the session (display identity only).
type bootUser struct {
	Name      string  `json:"name"`
	AvatarURL *string `json:"avatarUrl"`
}

// page answers GET /embed/viewer and /embed/editor?session=JWT: the embed's HTML with its boot
// data. The gateway has verified the token as a session bearer (401 and 410 pages otherwise,
// httpx.Page); the editor page also needs the editor capability (403 page).
func (s *Service) page(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		caller := httpx.CallerOf(c)
		if _, err := sessionCaller(caller); err != nil {
			return err
		}
		token := c.Query("session")
		claims, err := s.keys.Parse(token)
		if err != nil || claims.IntegrationID != caller.IntegrationID {
			return sessiontoken.ErrInvalid
		}
		frames, err := s.db.Ent.Integration.Query().Where(integration.ID(caller.IntegrationID)).
			Select(integration.FieldFrameAncestors).Only(c.UserContext())
		if ent.IsNotFound(err) {
			return sessiontoken.ErrInvalid
		}
		if err != nil {
			return apperr.Internal(err)
		}
		public, upload := s.urls.Origins()
		httpx.SetPageHeaders(c, pagePolicy(kind, public, upload), frames.FrameAncestors)
		// The caller's capabilities are the claims' still granted by the integration (checked by
		// the gateway at this request).
		if kind == sessiontoken.TypeEditor && !slices.Contains(caller.Capabilities, sessiontoken.TypeEditor) {
			return apperr.Forbidden("this session cannot open the editor: it is not an editor session")
		}
		boot := bootData{Kind: kind, SessionToken: token, ExpiresAt: httpx.ISOTime(claims.ExpiresAt.Time),
			Scoped: claims.ExternalUserID != "", Capabilities: claims.Capabilities}
		if claims.SplatID != "" {
			boot.SplatID = &claims.SplatID
		}
		if claims.Name != "" {
			boot.User = &bootUser{Name: claims.Name, AvatarURL: claims.AvatarURL}
		}
		html, err := renderPage(boot)
		if err != nil {
			return apperr.Internal(err)
		}
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Send(html)
	}
}

// pagePolicy is an embed page's Content-Security-Policy before its frame-ancestors
// (docs/security.md, Content Security Policy). Scripts and styles come from the gateway's own
// /embed/assets only: no inline script or style, no eval, no plugin, no <base>. Besides, only
// what the pages were measured to need (web/tests/csp-*.test.mjs in e2e TestBrowserPages; without each, they fail):
//   - 'wasm-unsafe-eval': Spark compiles its WebAssembly on the page (.splat and .ksplat scenes
//     never render without it: WebAssembly.compile throws);
//   - worker-src blob:: PlayCanvas' splat sorter (and Spark's) is a worker made from a blob: URL
//     (.ply, .sog and streamed scenes draw nothing without it);
//   - scene files, audio and the API from the page's origin or the gateway's public one (the
//     asset URLs' origin); the room's WebSocket is on the page's own origin, which 'self'
//     matches for ws: and wss: too;
//   - the editor only: its uploads PUT to the object store's origin, a picked scene file and
//     audio file are previewed from blob: URLs (fetched by PlayCanvas, played by <audio>), and
//     the room shows participants' avatars, which are the integrator's http(s) URLs on any host.
func pagePolicy(kind, public, upload string) string {
	own := "'self'"
	if public != "" {
		own += " " + public
	}
	img, connect, media := own, own, own
	if kind == sessiontoken.TypeEditor {
		img += " https: http:"
		if upload != "" && upload != public {
			connect += " " + upload
		}
		connect += " blob:"
		media += " blob:"
	}
	return "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src " + img +
		"; media-src " + media + "; connect-src " + connect + "; worker-src blob:; " +
		"object-src 'none'; base-uri 'none'; form-action 'none'"
}

// renderPage is the embed's HTML around its boot data. encoding/json escapes <, >, & and
// U+2028/2029, so no value can close the script element or break the parser around it; kind is
// one of two constants.
//
// What the first frame needs is requested at once, side by side (docs/embeds.md, Pages): the
// page's module; boot.js, which imports nothing and requests the scene record as soon as it
// arrives (async: it need not wait for the page to be parsed nor for the module's chunks); and
// the PlayCanvas engine (modulepreload), which draws every rendition and most uploads, so it is
// in before the record names the scene. A .splat or .ksplat upload not yet converted loads its
// own engine (Spark) when the record says so.
func renderPage(boot bootData) ([]byte, error) {
	data, err := json.Marshal(boot)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>splathost ` + boot.Kind + `</title>
<link rel="stylesheet" href="/embed/assets/embed.css">
<script id="splathost-boot" type="application/json">`)
	b.Write(data)
	b.WriteString(`</script>
<script type="module" src="/embed/assets/boot.js" async></script>
<script type="module" src="/embed/assets/` + boot.Kind + `.js"></script>
<link rel="modulepreload" href="/embed/assets/engine-playcanvas.js">
</head>
<body>
<div id="app"></div>
</body>
</html>
`)
	return b.Bytes(), nil
}
