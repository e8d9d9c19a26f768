package httpx

import (
	"crypto/sha256"
	"encoding/base64"
	"html"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
)

const (
	pageKey           = "splathost.page"
	frameAncestorsKey = "splathost.frameAncestors"
)

// Page marks a request as an HTML page (the embed pages): its errors are answered with a small
// HTML error page instead of the JSON envelope, since a browser frame shows them to a person.
// The gateway marks the page before authenticating it, so a bad token gets an HTML 401 too.
func Page(c *fiber.Ctx) error {
	MarkPage(c)
	return c.Next()
}

// MarkPage is Page for middleware that answers before the page's route is reached (the
// gateway's rate limit): an error it returns is then an HTML page too.
func MarkPage(c *fiber.Ctx) { c.Locals(pageKey, true) }

func isPage(c *fiber.Ctx) bool {
	p, _ := c.Locals(pageKey).(bool)
	return p
}

// SetPageHeaders sets the headers every embed page carries, success or error: its
// Content-Security-Policy (policy, then who may frame it: the integration's frame ancestors, any
// origin when it has none), no referrer (the URL holds the session token), never cached, and no
// content sniffing. An error page answered later in the same request keeps the frame ancestors
// set here (and its own, stricter policy).
func SetPageHeaders(c *fiber.Ctx, policy string, frameAncestors []string) {
	c.Locals(frameAncestorsKey, frameAncestors)
	c.Set(fiber.HeaderContentSecurityPolicy, policy+"; frame-ancestors "+frameAncestorsList(frameAncestors))
	setPageCommonHeaders(c)
}

func setPageCommonHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
}

// frameAncestorsList is the CSP source list: the configured origins, or * for any.
func frameAncestorsList(origins []string) string {
	if len(origins) == 0 {
		return "*"
	}
	return strings.Join(origins, " ")
}

// errorPageStyle is the error page's only style, allowed by its hash so that the page's policy
// needs no 'unsafe-inline'.
const errorPageStyle = `body{font:15px/1.5 system-ui,sans-serif;margin:0;display:grid;place-items:center;min-height:100vh;background:#111;color:#ddd}main{max-width:28em;padding:1em;text-align:center}`

// errorPagePolicy lets the error page load nothing and run nothing: its one inline style is
// allowed by hash.
var errorPagePolicy = func() string {
	sum := sha256.Sum256([]byte(errorPageStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; base-uri 'none'; form-action 'none'"
}()

// sendErrorPage answers e as an HTML page. It carries no script, and its CSP forbids any (it
// loads nothing but its inline style).
func sendErrorPage(c *fiber.Ctx, e *apperr.Error) error {
	origins, _ := c.Locals(frameAncestorsKey).([]string)
	setPageCommonHeaders(c)
	c.Set(fiber.HeaderContentSecurityPolicy, errorPagePolicy+"; frame-ancestors "+frameAncestorsList(origins))
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	title := "Embed unavailable"
	return c.Status(e.Status).SendString(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>` + title + `</title>
<style>` + errorPageStyle + `</style>
</head>
<body>
<main>
<h1>` + title + `</h1>
<p>` + html.EscapeString(e.Message) + `</p>
<p><small>Error ` + strconv.Itoa(e.Status) + `</small></p>
</main>
</body>
</html>
`)
}
