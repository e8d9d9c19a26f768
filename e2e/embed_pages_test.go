//go:build e2e

package e2e

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/testenv"
)

// page loads an embed page with token as its session parameter (none when empty).
func page(t *testing.T, kind, token string) *testenv.Response {
	t.Helper()
	path := "/embed/" + kind
	if token != "" {
		path += "?session=" + url.QueryEscape(token)
	}
	return do(t, "GET", path, nil, nil)
}

// requirePageHeaders checks the headers every embed page carries.
func requirePageHeaders(t *testing.T, r *testenv.Response, frameAncestors string) {
	t.Helper()
	require.Equal(t, "text/html; charset=utf-8", r.Header.Get("Content-Type"))
	require.Equal(t, "no-referrer", r.Header.Get("Referrer-Policy"))
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
	require.True(t, strings.HasSuffix(r.Header.Get("Content-Security-Policy"), "frame-ancestors "+frameAncestors),
		r.Header.Get("Content-Security-Policy"))
	html := string(r.Raw)
	require.True(t, strings.HasPrefix(html, "<!doctype html>\n<html lang=\"en\">"), html)
	require.Contains(t, html, "<title>")
	require.Contains(t, html, `<meta name="viewport" content="width=device-width, initial-scale=1">`)
}

// wantPagePolicy is an embed page's Content-Security-Policy before its frame-ancestors, as
// docs/security.md states it, for this stack's origins: the gateway's public one and, for the
// editor's uploads, the object store's.
func wantPagePolicy(kind string) string {
	origin := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			panic(err)
		}
		return u.Scheme + "://" + u.Host
	}
	own := "'self' " + origin(env.Config.PublicBase())
	img, connect, media := own, own, own
	if kind == "editor" {
		img += " https: http:"
		connect += " " + origin(env.Config.S3Endpoint) + " blob:"
		media += " blob:"
	}
	return "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src " + img +
		"; media-src " + media + "; connect-src " + connect + "; worker-src blob:; object-src 'none'; " +
		"base-uri 'none'; form-action 'none'"
}

// requireErrorPage checks an embed error page: status, an HTML page, and no script.
func requireErrorPage(t *testing.T, r *testenv.Response, status int) {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Raw))
	requirePageHeaders(t, r, "*")
	require.NotContains(t, strings.ToLower(string(r.Raw)), "<script")
	require.Contains(t, r.Header.Get("Content-Security-Policy"), "default-src 'none'")
	require.NotContains(t, r.Header.Get("Content-Security-Policy"), "'unsafe-inline'")
}

// bootOf extracts and decodes a page's boot JSON.
func bootOf(t *testing.T, r *testenv.Response) map[string]any {
	t.Helper()
	html := string(r.Raw)
	const open = `<script id="splathost-boot" type="application/json">`
	i := strings.Index(html, open)
	require.GreaterOrEqual(t, i, 0, html)
	rest := html[i+len(open):]
	end := strings.Index(rest, "</script>")
	require.GreaterOrEqual(t, end, 0, html)
	var boot map[string]any
	require.NoError(t, json.Unmarshal([]byte(rest[:end]), &boot))
	return boot
}

// TestEmbedPages: the viewer and editor pages boot from the session alone, and every bad
// session gets an HTML error page with the right status.
func TestEmbedPages(t *testing.T) {
	a := newTenant(t)
	sc := newScene(t, a, "pam", 1)["id"].(string)

	// A scoped viewer pinned to a scene, with a profile that tries to break out of the script.
	avatar := "https://cdn.example.com/a.png"
	name := "</script><script>alert(1)</script>\u2028"
	minted := mint(t, a, "pam", map[string]any{"type": "viewer", "splatId": sc, "user": map[string]any{"name": name, "avatarUrl": avatar}})
	viewer := minted["sessionToken"].(string)
	r := page(t, "viewer", viewer)
	require.Equal(t, 200, r.Status, string(r.Raw))
	requirePageHeaders(t, r, "*")
	require.Equal(t, wantPagePolicy("viewer")+"; frame-ancestors *", r.Header.Get("Content-Security-Policy"))
	html := string(r.Raw)
	require.Contains(t, html, `<link rel="stylesheet" href="/embed/assets/embed.css">`)
	require.Contains(t, html, `<script type="module" src="/embed/assets/viewer.js"></script>`)
	require.Contains(t, html, `<div id="app"></div>`)
	require.Contains(t, html, `<script type="module" src="/embed/assets/boot.js" async></script>`)
	// The boot data, boot.js (which fetches the scene record early) and the page's module: a
	// name closing the boot script would add one.
	require.Equal(t, 3, strings.Count(html, "</script>"), "the name cannot close the boot script")
	require.Equal(t, map[string]any{
		"kind": "viewer", "sessionToken": viewer, "expiresAt": minted["expiresAt"], "splatId": sc, "scoped": true,
		"capabilities": []any{"viewer"}, "user": map[string]any{"name": name, "avatarUrl": avatar},
	}, bootOf(t, r))
	exp, err := time.Parse(time.RFC3339, bootOf(t, r)["expiresAt"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(15*time.Minute), exp, time.Minute)

	// A guest editor: not scoped, no scene, no profile.
	guest := editorToken(t, a, "")
	r = page(t, "editor", guest)
	require.Equal(t, 200, r.Status, string(r.Raw))
	requirePageHeaders(t, r, "*")
	require.Contains(t, string(r.Raw), `<script type="module" src="/embed/assets/editor.js"></script>`)
	boot := bootOf(t, r)
	require.Equal(t, "editor", boot["kind"])
	require.Equal(t, false, boot["scoped"])
	require.Nil(t, boot["splatId"])
	require.Nil(t, boot["user"])
	require.Contains(t, boot, "user")
	require.Equal(t, []any{"editor"}, boot["capabilities"])
	r = page(t, "editor", editorToken(t, a, "pam"))
	require.Equal(t, 200, r.Status)
	require.Equal(t, true, bootOf(t, r)["scoped"])

	// The editor page needs the editor capability.
	requireErrorPage(t, page(t, "editor", viewer), 403)

	// Missing, forged and expired sessions: 401 pages.
	key := env.Config.SessionKeys[0]
	_, claims := tokenParts(t, viewer)
	sign := func(c map[string]any, secret []byte) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(c))
		tok.Header["kid"] = key.ID
		s, err := tok.SignedString(secret)
		require.NoError(t, err)
		return s
	}
	expired := map[string]any{}
	for k, v := range claims {
		expired[k] = v
	}
	expired["iat"] = float64(time.Now().Add(-20 * time.Minute).Unix())
	expired["exp"] = float64(time.Now().Add(-5 * time.Minute).Unix())
	parts := strings.Split(viewer, ".")
	for name, tok := range map[string]string{
		"missing":                 "",
		"garbage":                 "not-a-token",
		"forged signature":        parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])),
		"signed with another key": sign(claims, []byte(strings.Repeat("k", 32))),
		"expired":                 sign(expired, key.Secret),
		"secret key":              a.SecretKey,
	} {
		t.Run(name, func(t *testing.T) {
			for _, kind := range []string{"viewer", "editor"} {
				requireErrorPage(t, page(t, kind, tok), 401)
			}
		})
	}
	requireErrorPage(t, do(t, "GET", "/embed/viewer?session=", nil, nil), 401)
	// The really signed token is good: the expired one failed on its expiry alone.
	fresh := map[string]any{}
	for k, v := range claims {
		fresh[k] = v
	}
	require.Equal(t, 200, page(t, "viewer", sign(fresh, key.Secret)).Status)

	// A session bearer header does not open a page: the URL's token does.
	requireErrorPage(t, do(t, "GET", "/embed/viewer", sessionHeaders(viewer), nil), 401)
}

// TestEmbedPagesFrameAncestorsAndRevoke: the pages' CSP follows the integration's
// frameAncestors as the operator sets them, and a revoked integration's pages answer 410.
func TestEmbedPagesFrameAncestorsAndRevoke(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "rex", nil)
	viewer := mintToken(t, a, "rex", map[string]any{"type": "viewer"})
	editor := editorToken(t, a, "rex")
	patch := func(frames any) {
		t.Helper()
		r := do(t, "PATCH", "/admin/v1/integrations/"+a.IntegrationID, admin(), map[string]any{"frameAncestors": frames})
		require.Equal(t, 200, r.Status, string(r.Raw))
	}

	patch([]string{"https://shop.example.com", "https://*.example.org:8443", "'self'"})
	const want = "frame-ancestors https://shop.example.com https://*.example.org:8443 'self'"
	for _, tt := range []struct{ kind, token string }{{"viewer", viewer}, {"editor", editor}} {
		r := page(t, tt.kind, tt.token)
		require.Equal(t, 200, r.Status, string(r.Raw))
		require.Equal(t, wantPagePolicy(tt.kind)+"; "+want, r.Header.Get("Content-Security-Policy"), tt.kind)
	}
	// The editor page refused to a viewer is still framed only where the integration allows.
	r := page(t, "editor", viewer)
	require.Equal(t, 403, r.Status)
	require.True(t, strings.HasSuffix(r.Header.Get("Content-Security-Policy"), want), r.Header.Get("Content-Security-Policy"))

	patch([]string{})
	require.Equal(t, wantPagePolicy("viewer")+"; frame-ancestors *", page(t, "viewer", viewer).Header.Get("Content-Security-Policy"))

	require.Equal(t, 200, do(t, "POST", "/admin/v1/integrations/"+a.IntegrationID+"/revoke", admin(), nil).Status)
	require.Eventually(t, func() bool { return page(t, "viewer", viewer).Status == 410 }, 10*time.Second, 50*time.Millisecond)
	requireErrorPage(t, page(t, "viewer", viewer), 410)
	requireErrorPage(t, page(t, "editor", editor), 410)
	// Its editor sessions end with it.
	requireEnvelope(t, do(t, "PATCH", editorPath("/splats/ffffffffffffffffffffffff"), sessionHeaders(editor), map[string]any{"title": "x"}), 410)
}

// TestEmbedThroughTheSplitGateway: with every service in its own process, the editor routes
// reach the scene service (inside the session service's /api/embed) with the session's scope,
// and the pages the session service, their errors still HTML pages.
func TestEmbedThroughTheSplitGateway(t *testing.T) {
	s := startSplit(t)
	tn := newTenant(t)
	own := newScene(t, tn, "ada", 4)["id"].(string)
	editor := editorToken(t, tn, "ada")
	level := map[string]any{"camera": map[string]any{"position": []any{0.0, 1.0, 4.0}, "target": []any{0.0, 0.0, 0.0}, "fov": 50.0}}
	r := doAt(t, s.gatewayURL, "PATCH", editorPath("/splats/"+own), sessionHeaders(editor), map[string]any{"levelData": level})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, level, splatOf(r)["levelData"])
	require.Equal(t, level, splatOf(doAt(t, s.gatewayURL, "GET", "/api/embed/splats/"+own, sessionHeaders(editor), nil))["levelData"])
	r = doAt(t, s.gatewayURL, "PATCH", editorPath("/splats/"+own), sessionHeaders(editorToken(t, tn, "")), map[string]any{"title": "x"})
	requireEnvelope(t, r, 403)
	require.Equal(t, "AUTH_REQUIRED", r.Body["code"])

	r = doAt(t, s.gatewayURL, "GET", "/embed/editor?session="+url.QueryEscape(editor), nil, nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	requirePageHeaders(t, r, "*")
	require.Equal(t, true, bootOf(t, r)["scoped"])
	viewer := mintToken(t, tn, "ada", map[string]any{"type": "viewer"})
	requireErrorPage(t, doAt(t, s.gatewayURL, "GET", "/embed/editor?session="+url.QueryEscape(viewer), nil, nil), 403)
	requireErrorPage(t, doAt(t, s.gatewayURL, "GET", "/embed/viewer?session="+url.QueryEscape(viewer+"x"), nil, nil), 401)
}
