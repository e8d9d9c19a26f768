package gateway

import (
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// staticTree stands in for web.Dist, so this test does not need the npm build.
var staticTree = fstest.MapFS{
	"embed/assets/viewer.js":         {Data: []byte("import './chunk-A.js';")},
	"embed/assets/chunk-A.js":        {Data: []byte("export {};")},
	"embed/assets/embed.css":         {Data: []byte("body{}")},
	"embed/assets/spark.wasm":        {Data: []byte("\x00asm")},
	"embed/assets/sub/deep.js":       {Data: []byte("1")},
	"sdk/splathost-embed.js":         {Data: []byte("export function mountEditor(){}")},
	"sdk/splathost-embed.d.ts":       {Data: []byte("export declare function mountEditor(): void;")},
	"elsewhere/secret.txt":           {Data: []byte("not served")},
	"embed/assets/images/logo.svg":   {Data: []byte("<svg/>")},
	"embed/assets/unknown.weirdtype": {Data: []byte("?")},
}

func staticApp(t *testing.T) http.Handler {
	t.Helper()
	app, err := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Assets: staticTree})
	require.NoError(t, err)
	return adaptor{t, app}
}

// adaptor lets the table below use httptest-style requests against the Fiber app.
type adaptor struct {
	t   *testing.T
	app interface {
		Test(*http.Request, ...int) (*http.Response, error)
	}
}

func (a adaptor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp, err := a.app.Test(r, -1)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func get(t *testing.T, h http.Handler, method, target string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestStaticContentTypes(t *testing.T) {
	h := staticApp(t)
	for path, want := range map[string]string{
		"/embed/assets/viewer.js":         "text/javascript; charset=utf-8",
		"/embed/assets/embed.css":         "text/css; charset=utf-8",
		"/embed/assets/spark.wasm":        "application/wasm",
		"/embed/assets/sub/deep.js":       "text/javascript; charset=utf-8",
		"/sdk/splathost-embed.js":         "text/javascript; charset=utf-8",
		"/sdk/splathost-embed.d.ts":       "text/plain; charset=utf-8",
		"/embed/assets/images/logo.svg":   "image/svg+xml",
		"/embed/assets/unknown.weirdtype": "application/octet-stream",
	} {
		rec := get(t, h, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Equal(t, want, rec.Header().Get("Content-Type"), path)
		require.Equal(t, "no-cache", rec.Header().Get("Cache-Control"), path)
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), path)
		require.NotEmpty(t, rec.Header().Get("ETag"), path)
	}
	rec := get(t, h, http.MethodGet, "/embed/assets/viewer.js", nil)
	require.Equal(t, "import './chunk-A.js';", rec.Body.String())
}

func TestStaticETagRevalidation(t *testing.T) {
	h := staticApp(t)
	first := get(t, h, http.MethodGet, "/embed/assets/viewer.js", nil)
	etag := first.Header().Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{24}"$`, etag)
	other := get(t, h, http.MethodGet, "/embed/assets/chunk-A.js", nil).Header().Get("ETag")
	require.NotEqual(t, etag, other, "different bodies, different tags")

	for _, inm := range []string{etag, "W/" + etag, `"nope", ` + etag, "*"} {
		rec := get(t, h, http.MethodGet, "/embed/assets/viewer.js", map[string]string{"If-None-Match": inm})
		require.Equal(t, http.StatusNotModified, rec.Code, inm)
		require.Empty(t, rec.Body.String(), inm)
		require.Equal(t, etag, rec.Header().Get("ETag"), inm)
	}
	rec := get(t, h, http.MethodGet, "/embed/assets/viewer.js", map[string]string{"If-None-Match": `"stale"`})
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "import './chunk-A.js';", rec.Body.String())

	head := get(t, h, http.MethodHead, "/sdk/splathost-embed.js", nil)
	require.Equal(t, http.StatusOK, head.Code)
	require.NotEmpty(t, head.Header().Get("ETag"))
}

func TestStaticCORS(t *testing.T) {
	h := staticApp(t)
	sdk := get(t, h, http.MethodGet, "/sdk/splathost-embed.js", map[string]string{"Origin": "https://host.example"})
	require.Equal(t, "*", sdk.Header().Get("Access-Control-Allow-Origin"))
	pre := get(t, h, http.MethodOptions, "/sdk/splathost-embed.js", map[string]string{
		"Origin": "https://host.example", "Access-Control-Request-Method": "GET"})
	require.Equal(t, http.StatusNoContent, pre.Code)
	require.Equal(t, "*", pre.Header().Get("Access-Control-Allow-Origin"))
	// The embed bundles are loaded only by the gateway's own pages.
	assets := get(t, h, http.MethodGet, "/embed/assets/viewer.js", map[string]string{"Origin": "https://host.example"})
	require.Empty(t, assets.Header().Get("Access-Control-Allow-Origin"))
}

func TestStaticNotFound(t *testing.T) {
	h := staticApp(t)
	for _, path := range []string{
		"/embed/assets/missing.js",
		"/embed/assets/",     // no directory listing
		"/embed/assets/sub",  // a folder is not a file
		"/embed/assets/sub/", // nor with a slash
		"/embed/assets/../../elsewhere/secret.txt",
		"/embed/assets/%2e%2e/%2e%2e/elsewhere/secret.txt",
		"/sdk/",
		"/sdk/nothing.js",
	} {
		// A traversal is refused before any route (canonical.go), the others by the static route.
		want := http.StatusNotFound
		if strings.Contains(path, "..") || strings.Contains(path, "%2e") {
			want = http.StatusBadRequest
		}
		rec := get(t, h, http.MethodGet, path, nil)
		require.Equal(t, want, rec.Code, path)
		require.Contains(t, rec.Header().Get("Content-Type"), "application/json", path)
		var env envelope
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &env), path)
		require.Equal(t, "error", env.Status, path)
		require.NotEmpty(t, env.Message, path)
	}
	rec := get(t, h, http.MethodPost, "/embed/assets/viewer.js", nil)
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
}

// TestStaticWithoutBuild: a gateway built before the npm build (dist holds only .gitkeep) starts
// and answers 404 for every asset.
func TestStaticWithoutBuild(t *testing.T) {
	app, err := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Assets: fstest.MapFS{".gitkeep": {Data: nil}}})
	require.NoError(t, err)
	h := adaptor{t, app}
	require.Equal(t, http.StatusNotFound, get(t, h, http.MethodGet, "/sdk/splathost-embed.js", nil).Code)
}

// countingFS counts the files opened from the tree it wraps.
type countingFS struct {
	fs.FS
	opened map[string]int
}

func (c *countingFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err == nil {
		if st, serr := f.Stat(); serr == nil && !st.IsDir() {
			c.opened[name]++
		}
	}
	return f, err
}

// TestStaticReadsAFileOnItsFirstRequestOnly: starting the gateway reads no asset (the tree is
// megabytes a gateway may never serve), and a file is read once however often it is served.
func TestStaticReadsAFileOnItsFirstRequestOnly(t *testing.T) {
	tree := &countingFS{FS: staticTree, opened: map[string]int{}}
	app, err := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Assets: tree})
	require.NoError(t, err)
	require.Empty(t, tree.opened, "no asset is read at start")
	h := adaptor{t, app}
	for range 3 {
		rec := get(t, h, "GET", "/embed/assets/viewer.js", nil)
		require.Equal(t, 200, rec.Code)
		require.Equal(t, "import './chunk-A.js';", rec.Body.String())
	}
	require.Equal(t, map[string]int{"embed/assets/viewer.js": 1}, tree.opened)
}
