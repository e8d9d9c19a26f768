package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
)

// staticFile is one built asset. It is read and hashed on its first request, not at start:
// the tree (bundles and their source maps) is megabytes compiled into the binary, and copying
// it all to the heap would cost every gateway that much memory for files it may never serve.
type staticFile struct {
	contentType string
	read        func() ([]byte, error)
	once        sync.Once
	body        []byte
	etag        string
	err         error
}

// get returns the file's body and ETag, reading them once.
func (f *staticFile) get() ([]byte, string, error) {
	f.once.Do(func() {
		body, err := f.read()
		if err != nil {
			f.err = err
			return
		}
		sum := sha256.Sum256(body)
		f.body, f.etag = body, `"`+hex.EncodeToString(sum[:12])+`"`
	})
	return f.body, f.etag, f.err
}

// staticMount is a URL prefix served from a folder of the built web tree.
type staticMount struct {
	prefix string // URL path, without trailing slash
	dir    string // folder inside the tree
	// cors lets any origin read the files: a host page on another origin imports the SDK.
	cors bool
}

// staticMounts are the gateway's own static routes (docs/embeds.md, "Static assets"). The
// session service owns the rest of /embed (the HTML pages).
var staticMounts = []staticMount{
	{prefix: "/embed/assets", dir: "embed/assets"},
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
	return &staticFile{contentType: contentType, read: func() ([]byte, error) { return body, nil }}
}

// loadStatic lists every regular file under dir, keyed by its path below dir; each is read on
// its first request. A missing dir yields no files (a gateway built without the npm build still
// starts).
func loadStatic(tree fs.FS, dir string) (map[string]*staticFile, error) {
	files := map[string]*staticFile{}
	err := fs.WalkDir(tree, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		files[strings.TrimPrefix(p, dir+"/")] = &staticFile{contentType: contentTypeOf(p),
			read: func() ([]byte, error) { return fs.ReadFile(tree, p) }}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("static assets under %s: %w", dir, err)
	}
	return files, nil
}

// mountStatic registers the static routes; called before the upstream forwarders so that
// /embed/assets/* is answered here and never reaches the session service.
func mountStatic(app *fiber.App, tree fs.FS) error {
	for _, m := range staticMounts {
		files, err := loadStatic(tree, m.dir)
		if err != nil {
			return err
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
		body, etag, err := f.get()
		if err != nil {
			return apperr.Internal(err)
		}
		// The names are stable across releases, so browsers revalidate every time instead of
		// caching a stale bundle; the ETag makes that a 304.
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderETag, etag)
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		if etagMatches(c.Get(fiber.HeaderIfNoneMatch), etag) {
			return c.SendStatus(fiber.StatusNotModified)
		}
		c.Set(fiber.HeaderContentType, f.contentType)
		return c.Send(body)
	}
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
