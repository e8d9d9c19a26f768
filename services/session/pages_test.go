package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/sessiontoken"
)

// TestRenderPageEscapesBootData: no value of the boot data can end the script element or break
// the JavaScript parser around it, and the JSON reads back unchanged.
func TestRenderPageEscapesBootData(t *testing.T) {
	hostile := "</script><script>alert(1)</script>&<!-- \u2028\u2029 <\u0000>"
	avatar := "https://x.example/a.png?<>&"
	id := "0123456789abcdef01234567"
	boot := bootData{Kind: sessiontoken.TypeEditor, SessionToken: "a.b.c", ExpiresAt: "2026-01-01T00:00:00.000Z", SplatID: &id,
		Scoped: true, Capabilities: []string{sessiontoken.TypeEditor}, User: &bootUser{Name: hostile, AvatarURL: &avatar}}
	page, err := renderPage(boot)
	require.NoError(t, err)
	html := string(page)

	const open = `<script id="splathost-boot" type="application/json">`
	start := strings.Index(html, open)
	require.GreaterOrEqual(t, start, 0, html)
	rest := html[start+len(open):]
	end := strings.Index(rest, "</script>")
	require.GreaterOrEqual(t, end, 0)
	data := rest[:end]
	for _, bad := range []string{"<", ">", "&", "\u2028", "\u2029"} {
		require.NotContains(t, data, bad)
	}
	var got bootData
	require.NoError(t, json.Unmarshal([]byte(data), &got))
	require.Equal(t, boot, got)

	require.Equal(t, 3, strings.Count(html, "<script"), "the boot data, the record's prefetch and the module, nothing else")
	require.Contains(t, html, `<script type="module" src="/embed/assets/editor.js"></script>`)
	requireParallelLoads(t, html)
	require.Contains(t, html, `<link rel="stylesheet" href="/embed/assets/embed.css">`)
	require.Contains(t, html, `<div id="app"></div>`)
	require.True(t, strings.HasPrefix(html, "<!doctype html>\n<html lang=\"en\">"))
}

// TestRenderPageNulls: a guest session without a scene or profile boots with explicit nulls.
func TestRenderPageNulls(t *testing.T) {
	page, err := renderPage(bootData{Kind: sessiontoken.TypeViewer, SessionToken: "t", ExpiresAt: "x", Capabilities: []string{sessiontoken.TypeViewer}})
	require.NoError(t, err)
	require.Contains(t, string(page), `"splatId":null,"scoped":false,"capabilities":["viewer"],"user":null}`)
	require.Contains(t, string(page), `src="/embed/assets/viewer.js"`)
}

// TestPagePolicy: the embed pages run only the gateway's scripts and styles; the editor alone
// reaches the object store (uploads) and blob: URLs (picked files); the page references no
// inline script or style, so nothing inline needs allowing.
func TestPagePolicy(t *testing.T) {
	const public, store = "https://splats.example.com", "https://s3.example.com"
	viewer := pagePolicy(sessiontoken.TypeViewer, public, store)
	editor := pagePolicy(sessiontoken.TypeEditor, public, store)
	for _, p := range []string{viewer, editor} {
		require.Contains(t, p, "script-src 'self' 'wasm-unsafe-eval';")
		require.Contains(t, p, "style-src 'self';")
		require.Contains(t, p, "object-src 'none'; base-uri 'none'")
		require.NotContains(t, p, "'unsafe-inline'")
		require.NotContains(t, p, "'unsafe-eval'")
		require.NotContains(t, p, "frame-ancestors", "added per integration by httpx.SetPageHeaders")
	}
	require.Contains(t, viewer, "connect-src 'self' "+public+";")
	require.NotContains(t, viewer, store)
	require.Contains(t, viewer, "media-src 'self' "+public+";")
	require.Contains(t, editor, "connect-src 'self' "+public+" "+store+" blob:;")
	require.Contains(t, editor, "media-src 'self' "+public+" blob:;")
	require.Contains(t, viewer, "img-src 'self' "+public+";")
	require.Contains(t, editor, "img-src 'self' "+public+" https: http:;", "avatars are on the integrator's hosts")
	// Without known origins (no signer wired) the pages fall back to their own origin.
	require.Contains(t, pagePolicy(sessiontoken.TypeEditor, "", ""), "connect-src 'self' blob:;")

	page, err := renderPage(bootData{Kind: sessiontoken.TypeViewer})
	require.NoError(t, err)
	html := string(page)
	require.NotContains(t, html, "<style")
	require.NotContains(t, html, " style=")
	require.Equal(t, 3, strings.Count(html, "<script"), "the boot data block, the record's prefetch and the module")
	require.Contains(t, html, `<script type="module" src="/embed/assets/viewer.js"></script>`)
	requireParallelLoads(t, html)
}

// requireParallelLoads: a page requests the scene record (boot.js, run as soon as it arrives)
// and the engine (modulepreload) beside its own module, and boot.js comes after the boot data
// it reads.
func requireParallelLoads(t *testing.T, html string) {
	t.Helper()
	prefetch := `<script type="module" src="/embed/assets/boot.js" async></script>`
	require.Contains(t, html, prefetch)
	require.Greater(t, strings.Index(html, prefetch), strings.Index(html, `id="splathost-boot"`))
	require.Contains(t, html, `<link rel="modulepreload" href="/embed/assets/engine-playcanvas.js">`)
}
