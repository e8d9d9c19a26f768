package gateway

import (
	"io"
	"io/fs"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/api"
	"github.com/splathost/splathost/api/apitest"
	"github.com/splathost/splathost/web"
)

// TestServedOpenAPIDocument: /openapi.yaml is the embedded document, a valid OpenAPI 3.1
// document, readable from any origin.
func TestServedOpenAPIDocument(t *testing.T) {
	h := docsApp(t)
	rec := get(t, h, "GET", "/openapi.yaml", map[string]string{"Origin": "https://elsewhere.example"})
	require.Equal(t, 200, rec.Code)
	require.Equal(t, "application/yaml", rec.Header().Get("Content-Type"))
	require.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
	require.Equal(t, string(api.Document), rec.Body.String())
	doc, err := apitest.Parse(rec.Body.Bytes())
	require.NoError(t, err)
	require.NoError(t, doc.ValidateOpenAPI31())
	require.Equal(t, 405, get(t, h, "POST", "/openapi.yaml", nil).Code)
}

// assetRef finds the URLs an HTML page makes the browser load or link to.
var assetRef = regexp.MustCompile(`(?i)\b(?:src|href|data-spec-url)\s*=\s*"([^"]*)"`)

// TestDocsPageIsSelfContained: /docs is HTML whose every script, style, icon and document URL is
// on the gateway's own origin (or inline data), each served, under a policy that forbids any
// other host.
func TestDocsPageIsSelfContained(t *testing.T) {
	h := docsApp(t)
	rec := get(t, h, "GET", "/docs", nil)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	csp := rec.Header().Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.NotRegexp(t, `https?:`, csp, "the page's policy names no other host")
	page := rec.Body.String()
	refs := assetRef.FindAllStringSubmatch(page, -1)
	require.NotEmpty(t, refs)
	sawScript := false
	for _, m := range refs {
		ref := m[1]
		if strings.HasPrefix(ref, "data:") {
			continue
		}
		require.True(t, strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "//"), "%s is not same-origin", ref)
		asset := get(t, h, "GET", ref, nil)
		require.Equal(t, 200, asset.Code, "%s is not served", ref)
		sawScript = sawScript || strings.HasSuffix(ref, ".js")
	}
	require.True(t, sawScript, "the page loads its renderer from the gateway")
	require.Contains(t, page, `data-spec-url="/openapi.yaml"`)
}

// docsApp is a gateway serving the real web build; the docs page exists only after it.
func docsApp(t *testing.T) *adaptor {
	t.Helper()
	if _, err := fs.Stat(web.Dist, "docs/index.html"); err != nil {
		t.Fatal("web/dist has no docs page: run `make web` first")
	}
	app, err := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Assets: web.Dist})
	require.NoError(t, err)
	return &adaptor{t, app}
}

// TestDocsSiteServesTheGuides: the guides rendered from docs/ are served at /docs/guides (the
// index), /docs/guides/<name> and /docs/<name> as HTML under the docs policy, with a
// navigation that links every page and the API reference, and nothing from another host;
// unknown pages are 404.
func TestDocsSiteServesTheGuides(t *testing.T) {
	h := docsApp(t)
	index := get(t, h, "GET", "/docs/guides", nil)
	require.Equal(t, 200, index.Code, index.Body.String())
	require.Equal(t, "text/html; charset=utf-8", index.Header().Get("Content-Type"))
	require.Contains(t, index.Header().Get("Content-Security-Policy"), "default-src 'none'")
	require.Contains(t, index.Body.String(), `href="/docs"`, "the navigation links the API reference")
	for _, path := range []string{"/docs/guides/webhooks", "/docs/guides/uploading", "/docs/operations", "/docs/security", "/docs/benchmarks"} {
		rec := get(t, h, "GET", path, nil)
		require.Equal(t, 200, rec.Code, path)
		require.Contains(t, index.Body.String(), `href="`+path+`"`, "the index lists %s", path)
		// Links may point anywhere; what the page loads (scripts, images, styles) is its own.
		require.NotRegexp(t, `(?i)<script|\bsrc\s*=\s*"(?:https?:)?//|<link[^>]*href\s*=\s*"(?:https?:)?//`, rec.Body.String(), path)
		require.Contains(t, rec.Body.String(), `<link rel="stylesheet" href="/docs/assets/site.css">`)
	}
	require.Equal(t, 200, get(t, h, "GET", "/docs/assets/site.css", nil).Code)
	for _, path := range []string{"/docs/nope", "/docs/guides/nope", "/docs/site/security.html", "/docs/guides/index", "/docs/security.html"} {
		require.Equal(t, 404, get(t, h, "GET", path, nil).Code, path)
	}
}

// TestBuiltAssetsAreServedCompressed: the real build (web.Dist) holds brotli and gzip copies of
// the engines, the API reference's renderer and its pages, and the gateway sends them, so the
// largest files of a first visit travel at a fraction of their size.
func TestBuiltAssetsAreServedCompressed(t *testing.T) {
	h := docsApp(t)
	for _, path := range []string{"/embed/assets/engine-playcanvas.js", "/embed/assets/engine-spark.js",
		"/embed/assets/viewer.js", "/sdk/splathost-embed.js", "/docs/assets/redoc.standalone.js", "/docs/embeds", "/docs/guides/embedding"} {
		plain := get(t, h, "GET", path, nil)
		require.Equal(t, 200, plain.Code, path)
		require.Empty(t, plain.Header().Get("Content-Encoding"), path)
		for _, coding := range []string{"br", "gzip"} {
			rec := get(t, h, "GET", path, map[string]string{"Accept-Encoding": coding})
			require.Equal(t, 200, rec.Code, path)
			require.Equal(t, coding, rec.Header().Get("Content-Encoding"), path)
			require.Equal(t, "Accept-Encoding", rec.Header().Get("Vary"), path)
			require.Less(t, rec.Body.Len(), plain.Body.Len()/2, "%s: %s is %d B of %d", path, coding, rec.Body.Len(), plain.Body.Len())
			require.NotEqual(t, plain.Header().Get("ETag"), rec.Header().Get("ETag"), path)
		}
	}
}
