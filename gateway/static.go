package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
)

// staticBody is one stored encoding of a built asset (the file itself, or the .br or .gz the web
// build wrote next to it). It is read and hashed on its first request, not at start: the tree
// (bundles and their source maps) is megabytes compiled into the binary, and copying it all to
// the heap would cost every gateway that much memory for files it may never serve.
type staticBody struct {
	read func() ([]byte, error)
	once sync.Once
	body []byte
	etag string
	err  error
}

// get returns the body and its ETag, reading them once. Each encoding has its own tag (of its
// own bytes): a cache must not answer a gzip request with a 304 for the brotli body it holds.
func (b *staticBody) get() ([]byte, string, error) {
	b.once.Do(func() {
		body, err := b.read()
		if err != nil {
			b.err = err
			return
		}
		sum := sha256.Sum256(body)
		b.body, b.etag = body, `"`+hex.EncodeToString(sum[:12])+`"`
	})
	return b.body, b.etag, b.err
}

// staticFile is one built asset: its bytes as built and the encodings the build compressed it
// to, so no request compresses anything (docs/embeds.md, "Static assets").
type staticFile struct {
	contentType string
	identity    *staticBody
	// encoded maps a content coding ("br", "gzip") to the file's precompressed body.
	encoded map[string]*staticBody
	// immutable marks a name that changes with the content (a hashed chunk): browsers keep it
	// for a year without asking again.
	immutable bool
}

// codings are the precompressed encodings the web build writes (build.mjs, precompress), by
// the suffix of their file, in the order the gateway prefers them: brotli is the smaller.
var codings = []struct{ name, suffix string }{{"br", ".br"}, {"gzip", ".gz"}}

// staticMount is a URL prefix served from a folder of the built web tree.
type staticMount struct {
	prefix string // URL path, without trailing slash
	dir    string // folder inside the tree
	// cors lets any origin read the files: a host page on another origin imports the SDK.
	cors bool
	// immutable matches the names (below dir) that carry a hash of their content.
	immutable *regexp.Regexp
}

// staticMounts are the gateway's own static routes (docs/embeds.md, "Static assets"). The
// session service owns the rest of /embed (the HTML pages).
var staticMounts = []staticMount{
	// esbuild names the embeds' shared chunks chunks/[name]-[hash] (build.mjs): a new build of
	// one is a new name, so a cached one is never stale.
	{prefix: "/embed/assets", dir: "embed/assets", immutable: regexp.MustCompile(`^chunks/[^/]+-[A-Z0-9]{8}\.(js|css)$`)},
	{prefix: "/sdk", dir: "sdk", cors: true},
	{prefix: "/docs/assets", dir: "docs/assets"},
}

// contentTypes fixes the types the browser checks strictly (module scripts, stylesheets and
// wasm streaming compile refuse a wrong one) instead of trusting the host's mime tables.
var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".wasm": "application/wasm",
	".map":  "application/json; charset=utf-8",
	".json": "application/json; charset=utf-8",
	".ts":   "text/plain; charset=utf-8", // the SDK's .d.ts: readable in a browser tab
}

func contentTypeOf(name string) string {
	ext := path.Ext(name)
	if t, ok := contentTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// newStaticFile serves body (already in memory) as contentType, with an ETag of its content.
func newStaticFile(body []byte, contentType string) *staticFile {
	return &staticFile{contentType: contentType,
		identity: &staticBody{read: func() ([]byte, error) { return body, nil }}}
}

// treeBody is a body read from the tree on its first request.
func treeBody(tree fs.FS, p string) *staticBody {
	return &staticBody{read: func() ([]byte, error) { return fs.ReadFile(tree, p) }}
}

// loadStatic lists every regular file under dir, keyed by its path below dir; each is read on
// its first request. A file's .br and .gz beside it are its encodings, not files of their own.
// A missing dir yields no files (a gateway built without the npm build still starts).
func loadStatic(tree fs.FS, dir string) (map[string]*staticFile, error) {
	paths := map[string]bool{}
	err := fs.WalkDir(tree, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			return err
		}
		if d.Type().IsRegular() {
			paths[p] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("static assets under %s: %w", dir, err)
	}
	files := map[string]*staticFile{}
	for p := range paths {
		if encodingOf(p, paths) != "" {
			continue
		}
		f := &staticFile{contentType: contentTypeOf(p), identity: treeBody(tree, p)}
		for _, c := range codings {
			if paths[p+c.suffix] {
				if f.encoded == nil {
					f.encoded = map[string]*staticBody{}
				}
				f.encoded[c.name] = treeBody(tree, p+c.suffix)
			}
		}
		files[strings.TrimPrefix(p, dir+"/")] = f
	}
	return files, nil
}

// encodingOf names the coding of p when p is another file's precompressed copy (its name plus
// .br or .gz), "" otherwise: a .gz with no file of its own name beside it is served as itself.
func encodingOf(p string, paths map[string]bool) string {
	for _, c := range codings {
		if base, ok := strings.CutSuffix(p, c.suffix); ok && paths[base] {
			return c.name
		}
	}
	return ""
}

// mountStatic registers the static routes; called before the upstream forwarders so that
// /embed/assets/* is answered here and never reaches the session service.
func mountStatic(app *fiber.App, tree fs.FS) error {
	for _, m := range staticMounts {
		files, err := loadStatic(tree, m.dir)
		if err != nil {
			return err
		}
		if m.immutable != nil {
			for name, f := range files {
				f.immutable = m.immutable.MatchString(name)
			}
		}
		h := staticHandler(files, m.cors)
		app.All(m.prefix+"/*", h)
	}
	return nil
}

func staticHandler(files map[string]*staticFile, cors bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if cors {
			c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
		}
		m := c.Method()
		if cors && m == fiber.MethodOptions {
			c.Set(fiber.HeaderAccessControlAllowMethods, "GET, HEAD, OPTIONS")
			return c.SendStatus(fiber.StatusNoContent)
		}
		if m != fiber.MethodGet && m != fiber.MethodHead {
			c.Set(fiber.HeaderAllow, "GET, HEAD")
			return apperr.New(fiber.StatusMethodNotAllowed, "method not allowed")
		}
		// Files are looked up by exact name, so "..", a folder (no listings) or an unknown
		// name all miss.
		f, ok := files[c.Params("*")]
		if !ok {
			return apperr.NotFound("asset not found")
		}
		coding, b := f.pick(c.Get(fiber.HeaderAcceptEncoding))
		body, etag, err := b.get()
		if err != nil {
			return apperr.Internal(err)
		}
		if f.immutable {
			c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
		} else {
			// The other names are stable across releases, so browsers revalidate every time
			// instead of caching a stale bundle; the ETag makes that a 304.
			c.Set(fiber.HeaderCacheControl, "no-cache")
		}
		if len(f.encoded) > 0 {
			c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
		}
		c.Set(fiber.HeaderETag, etag)
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		if etagMatches(c.Get(fiber.HeaderIfNoneMatch), etag) {
			return c.SendStatus(fiber.StatusNotModified)
		}
		if coding != "" {
			c.Set(fiber.HeaderContentEncoding, coding)
		}
		c.Set(fiber.HeaderContentType, f.contentType)
		return c.Send(body)
	}
}

// pick chooses the body to send for an Accept-Encoding header: the first of codings the file
// has and the client accepts, else the file as built ("" coding).
func (f *staticFile) pick(acceptEncoding string) (string, *staticBody) {
	if len(f.encoded) > 0 && acceptEncoding != "" {
		for _, c := range codings {
			if b, ok := f.encoded[c.name]; ok && accepts(acceptEncoding, c.name) {
				return c.name, b
			}
		}
	}
	return "", f.identity
}

// accepts reports whether an Accept-Encoding header (RFC 9110, 12.5.3) allows coding: named
// with a q above 0, or left out where "*" has one.
func accepts(header, coding string) bool {
	star := false
	for _, item := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(item, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		ok := qualityAboveZero(params)
		switch name {
		case coding:
			return ok
		case "*":
			star = ok
		}
	}
	return star
}

// qualityAboveZero reads a coding's parameters ("q=0.5"): a q of 0 (0, 0.0, 0.000) refuses it,
// anything else, or no q at all, accepts it.
func qualityAboveZero(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			return strings.Trim(strings.TrimSpace(v), "0.") != ""
		}
	}
	return true
}

// etagMatches applies If-None-Match's weak comparison (RFC 9110, 13.1.2) to a list of tags.
func etagMatches(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == etag {
			return true
		}
	}
	return false
}
