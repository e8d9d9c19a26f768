package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// compressedTree holds a bundle with the copies the web build writes beside it (build.mjs,
// precompress), a hashed chunk, a file left uncompressed and a .gz with no file of its name.
func compressedTree(t *testing.T) (fstest.MapFS, []byte, []byte) {
	t.Helper()
	plain := []byte(strings.Repeat("export const engine = 'splats';\n", 400))
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write(plain)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	// The gateway never decodes brotli: any bytes stand for the build's output.
	br := []byte("brotli stand-in, shorter than the gzip")
	require.Less(t, len(br), gz.Len())
	return fstest.MapFS{
		"embed/assets/engine.js":                   {Data: plain},
		"embed/assets/engine.js.gz":                {Data: gz.Bytes()},
		"embed/assets/engine.js.br":                {Data: br},
		"embed/assets/chunks/chunk-7QKXJ2ZD.js":    {Data: []byte("export {};")},
		"embed/assets/chunks/chunk-7QKXJ2ZD.js.gz": {Data: []byte("not really gzip")},
		"embed/assets/tiny.js":                     {Data: []byte("1")},
		"embed/assets/archive.gz":                  {Data: []byte("an archive")},
	}, plain, br
}

func TestStaticServesPrecompressedCopies(t *testing.T) {
	tree, plain, br := compressedTree(t)
	app, err := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Assets: tree})
	require.NoError(t, err)
	h := adaptor{t, app}
	const path = "/embed/assets/engine.js"
	etags := map[string]string{}
	for _, tc := range []struct{ accept, coding string }{
		{"gzip, deflate, br, zstd", "br"},
		{"br", "br"},
		{"*", "br"},
		{"gzip", "gzip"},
		{"br;q=0, gzip;q=0.8", "gzip"},
		{"BR;Q=0.0, *;q=0.5", "gzip"},
		{"", ""},
		{"identity", ""},
		{"gzip;q=0, br;q=0", ""},
		{"deflate", ""},
	} {
		rec := get(t, h, http.MethodGet, path, map[string]string{"Accept-Encoding": tc.accept})
		require.Equal(t, http.StatusOK, rec.Code, tc.accept)
		require.Equal(t, tc.coding, rec.Header().Get("Content-Encoding"), tc.accept)
		require.Equal(t, "Accept-Encoding", rec.Header().Get("Vary"), tc.accept)
		require.Equal(t, "text/javascript; charset=utf-8", rec.Header().Get("Content-Type"), tc.accept)
		require.Equal(t, strconv.Itoa(rec.Body.Len()), rec.Header().Get("Content-Length"), tc.accept)
		switch tc.coding {
		case "br":
			require.Equal(t, br, rec.Body.Bytes(), tc.accept)
		case "gzip":
			r, err := gzip.NewReader(rec.Body)
			require.NoError(t, err)
			got, err := io.ReadAll(r)
			require.NoError(t, err)
			require.Equal(t, plain, got, tc.accept)
			require.Less(t, rec.Body.Len(), len(plain)/10, "the gzip copy is what is sent")
		default:
			require.Equal(t, plain, rec.Body.Bytes(), tc.accept)
		}
		if prev, ok := etags[tc.coding]; ok {
			require.Equal(t, prev, rec.Header().Get("ETag"), "one tag per encoding")
		}
		etags[tc.coding] = rec.Header().Get("ETag")
	}
	require.Len(t, etags, 3)
	require.NotEqual(t, etags["br"], etags["gzip"])
	require.NotEqual(t, etags[""], etags["gzip"])

	// A revalidation matches the tag of the encoding asked for, not another one's.
	rec := get(t, h, http.MethodGet, path, map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etags["gzip"]})
	require.Equal(t, http.StatusNotModified, rec.Code)
	require.Empty(t, rec.Body.Bytes())
	require.Equal(t, etags["gzip"], rec.Header().Get("ETag"))
	require.Equal(t, "Accept-Encoding", rec.Header().Get("Vary"))
	rec = get(t, h, http.MethodGet, path, map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etags["br"]})
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "gzip", rec.Header().Get("Content-Encoding"))

	head := get(t, h, http.MethodHead, path, map[string]string{"Accept-Encoding": "br"})
	require.Equal(t, http.StatusOK, head.Code)
	require.Equal(t, "br", head.Header().Get("Content-Encoding"))
	require.Equal(t, strconv.Itoa(len(br)), head.Header().Get("Content-Length"))

	// The copies are not files of their own; a .gz with no file of its name is one.
	require.Equal(t, http.StatusNotFound, get(t, h, http.MethodGet, path+".gz", nil).Code)
	require.Equal(t, http.StatusNotFound, get(t, h, http.MethodGet, path+".br", nil).Code)
	archive := get(t, h, http.MethodGet, "/embed/assets/archive.gz", map[string]string{"Accept-Encoding": "gzip"})
	require.Equal(t, http.StatusOK, archive.Code)
	require.Equal(t, "an archive", archive.Body.String())
	require.Empty(t, archive.Header().Get("Content-Encoding"))

	// A file the build left uncompressed (too small to gain) varies on nothing.
	tiny := get(t, h, http.MethodGet, "/embed/assets/tiny.js", map[string]string{"Accept-Encoding": "gzip, br"})
	require.Equal(t, "1", tiny.Body.String())
	require.Empty(t, tiny.Header().Get("Content-Encoding"))
	require.Empty(t, tiny.Header().Get("Vary"))
}

// TestStaticCachesHashedChunksForAYear: a chunk whose name carries its content's hash is kept
// by browsers without a revalidation; a stable name is revalidated on every use.
func TestStaticCachesHashedChunksForAYear(t *testing.T) {
	tree, _, _ := compressedTree(t)
	app, err := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Assets: tree})
	require.NoError(t, err)
	h := adaptor{t, app}
	chunk := get(t, h, http.MethodGet, "/embed/assets/chunks/chunk-7QKXJ2ZD.js", map[string]string{"Accept-Encoding": "gzip"})
	require.Equal(t, http.StatusOK, chunk.Code)
	require.Equal(t, "public, max-age=31536000, immutable", chunk.Header().Get("Cache-Control"))
	require.Equal(t, "gzip", chunk.Header().Get("Content-Encoding"))
	for _, p := range []string{"/embed/assets/engine.js", "/embed/assets/tiny.js"} {
		require.Equal(t, "no-cache", get(t, h, http.MethodGet, p, nil).Header().Get("Cache-Control"), p)
	}
}
