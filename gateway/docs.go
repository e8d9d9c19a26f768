package gateway

import (
	"io/fs"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/api"
)

// docsPolicy confines the API reference page to the gateway's own origin: Redoc's bundle and
// the document come from here, its styles are injected at run time (style-src 'unsafe-inline')
// and its search index runs in a blob: worker. Nothing else may load, so a future renderer that
// reached for a CDN or a web font would fail visibly instead of phoning out.
const docsPolicy = "default-src 'none'; script-src 'self'; worker-src blob:; connect-src 'self'; " +
	"style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; base-uri 'none'; " +
	"form-action 'none'; frame-ancestors 'self'"

// mountDocs serves the OpenAPI document at /openapi.yaml (readable from any origin, so tools and
// other sites' API clients can load it), the reference page at /docs, which renders that
// document with the renderer the web build put in docs/ (served at /docs/assets), and the guides
// the web build rendered from the repository's docs/ into docs/site: /docs/guides (the index),
// /docs/guides/<name> and /docs/<name>. Without a built tree the pages answer 404 and the
// document is still served.
func mountDocs(app *fiber.App, tree fs.FS) error {
	app.Get("/openapi.yaml", staticHandler(map[string]*staticFile{"": newStaticFile(api.Document, "application/yaml")}, true))
	page := map[string]*staticFile{}
	if tree != nil {
		// Listed with the rest of docs/, so the page's precompressed copies come with it.
		files, err := loadStatic(tree, "docs")
		if err != nil {
			return err
		}
		if f, ok := files["index.html"]; ok {
			page[""] = f
		}
	}
	site, err := docsSite(tree)
	if err != nil {
		return err
	}
	policy := func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentSecurityPolicy, docsPolicy)
		return c.Next()
	}
	app.Get("/docs", policy, staticHandler(page, false))
	// After the /docs/assets mount (mountStatic), which answers every path below it.
	app.Get("/docs/*", policy, staticHandler(site, false))
	return nil
}

// docsSite maps each rendered page of docs/site to its path below /docs: guides/index.html is
// "guides", guides/x.html "guides/x", x.html "x".
func docsSite(tree fs.FS) (map[string]*staticFile, error) {
	if tree == nil {
		return map[string]*staticFile{}, nil
	}
	files, err := loadStatic(tree, "docs/site")
	if err != nil {
		return nil, err
	}
	site := make(map[string]*staticFile, len(files))
	for name, f := range files {
		if !strings.HasSuffix(name, ".html") {
			continue
		}
		name = strings.TrimSuffix(strings.TrimSuffix(name, ".html"), "/index")
		site[name] = f
	}
	return site, nil
}
