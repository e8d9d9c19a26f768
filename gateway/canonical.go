package gateway

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/splathost/splathost/internal/apperr"
)

// Canonical paths (docs/security.md). Fiber routes on the path exactly as the client wrote it,
// while fasthttp's URI().Path() (and Go's path.Clean, and any proxy in front) decodes %XX,
// collapses "//" and resolves "." and "..": /assets/%2e%2e/metrics matched the public asset
// route here and reached the scene service as /metrics. So before any route sees a request, the
// gateway refuses every path on which those readings could differ, and it forwards the raw path
// it checked (forward.go, stream.go, tunnel.go never send a re-normalised one). For an accepted
// path, decoding its escapes is the only thing a normaliser can change, and decoding creates no
// separator, no dot segment and no further escape.

// NonCanonicalPathCode is the envelope's code of a refused path.
const NonCanonicalPathCode = "NON_CANONICAL_PATH"

// opaqueRoutes are the routes with one path segment that carries a client-chosen string rather
// than an id the product minted: the operator's customer usage, whose segment "*" is an
// integrator's external user id (any text up to 256 characters but control characters, so
// "team/ada" or "50%" are valid ids). Clients path-escape it (the SDK: url.PathEscape), which
// legitimately gives %2F, %5C, %25 followed by hex and %2E there; the "%2F fix" (commit 7dd2293)
// made the forwarder keep them. In that one segment escapes are therefore allowed: the segment
// reaches the service raw, Fiber routes on the raw path (one segment, whatever it encodes) and
// the handler decodes it once, into an id it only looks up. What stays refused there is what
// could still split or leave the segment: a raw backslash, a "." or ".." segment, control
// characters raw or encoded, malformed escapes. Literal segments match case-insensitively, as
// Fiber's routing does; ":" is any canonical segment.
var opaqueRoutes = [][]string{
	{"admin", "v1", "integrations", ":", "customers", "*", "usage"},
}

// canonicalPaths refuses a request whose path is not canonical: 400 with the envelope, code
// NonCanonicalPathCode. The query string is not a path and is not looked at.
func canonicalPaths(c *fiber.Ctx) error {
	// PathOriginal is what Fiber routes on and what the forwarders send; the check keeps none
	// of it, so the unsafe view saves a copy per request.
	if problem := pathProblem(utils.UnsafeString(c.Request().URI().PathOriginal())); problem != "" {
		return apperr.Invalid("request path is not canonical", "path: "+problem).With("code", NonCanonicalPathCode)
	}
	return c.Next()
}

// pathProblem returns why raw (a request's path as sent, without the query) is not canonical,
// or "" when it is. It runs on every request: a path without escapes costs no allocation.
func pathProblem(raw string) string {
	if raw == "" || raw[0] != '/' {
		return "must start with /"
	}
	opaque := -1
	if len(raw) > len("/admin/") && strings.EqualFold(raw[:len("/admin/")], "/admin/") {
		opaque = opaqueSegment(strings.Split(raw[1:], "/"))
	}
	rest := raw[1:]
	for i := 0; ; i++ {
		s, next, more := strings.Cut(rest, "/")
		switch {
		case s == "" && !more:
			// "/" itself, or one trailing slash: no normaliser removes or merges it.
		case s == "":
			return "must not contain empty segments (//)"
		case s == "." || s == "..":
			return "must not contain . or .. segments"
		default:
			if problem := segmentProblem(s, i == opaque); problem != "" {
				return problem
			}
		}
		if !more {
			return ""
		}
		rest = next
	}
}

// opaqueSegment is the index in segs of the opaque segment of the opaqueRoutes route segs
// matches (a trailing slash allowed, as Fiber allows it), or -1.
func opaqueSegment(segs []string) int {
	if n := len(segs); n > 0 && segs[n-1] == "" {
		segs = segs[:n-1]
	}
routes:
	for _, route := range opaqueRoutes {
		if len(route) != len(segs) {
			continue
		}
		at := -1
		for i, r := range route {
			switch {
			case r == "*":
				at = i
			case r != ":" && !strings.EqualFold(r, segs[i]):
				continue routes
			}
		}
		return at
	}
	return -1
}

// segmentProblem returns why one path segment (neither empty nor a dot segment) is not
// canonical. In an opaque segment (opaqueRoutes) every well-formed escape but of a control
// character is allowed.
func segmentProblem(s string, opaque bool) string {
	var decoded []byte // s decoded once, built only when it holds an escape
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b <= ' ' || b == 0x7f:
			return "must not contain spaces or control characters (raw or percent-encoded)"
		case b == '\\':
			return `must not contain backslashes (\ or %5C)`
		case b != '%':
			if decoded != nil {
				decoded = append(decoded, b)
			}
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "must not contain malformed percent-encoding (% not followed by two hex digits)"
		}
		d := unhex(s[i+1])<<4 | unhex(s[i+2])
		switch {
		case d < ' ' || d == 0x7f:
			return "must not contain spaces or control characters (raw or percent-encoded)"
		case opaque:
		case d == '.':
			return "must not contain percent-encoded dots (%2E)"
		case d == '/':
			return "must not contain percent-encoded slashes (%2F)"
		case d == '\\':
			return `must not contain backslashes (\ or %5C)`
		}
		if decoded == nil {
			decoded = append(make([]byte, 0, len(s)), s[:i]...)
		}
		decoded = append(decoded, d)
		i += 2
	}
	if !opaque && hasEscape(decoded) {
		// %252e, or %25%32%65: decoded once it is %2e, which a second decoder turns into a dot.
		return "must not be percent-encoded twice (%25 followed by an escape)"
	}
	return ""
}

// hasEscape reports whether b holds a % followed by two hex digits.
func hasEscape(b []byte) bool {
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' && isHex(b[i+1]) && isHex(b[i+2]) {
			return true
		}
	}
	return false
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

func unhex(b byte) byte {
	switch {
	case b <= '9':
		return b - '0'
	case b <= 'F':
		return b - 'A' + 10
	}
	return b - 'a' + 10
}
