package gateway

import (
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// usage is the operator's customer usage route, whose customer segment is opaque.
const usage = "/admin/v1/integrations/0123456789abcdef01234567/customers/"

// TestPathProblem: the canonical rule, path by path. Accepted are the product's own paths (ids,
// LOD files, signed asset URLs, escaped names) and, in the customer usage route's id segment,
// the escapes a path-escaped external id holds; refused is everything a normaliser would read
// differently from the raw path.
func TestPathProblem(t *testing.T) {
	accepted := []string{
		"/",
		"/healthz",
		"/api/v1/splats",
		"/api/v1/splats/",
		"/api/v1/splats/0123456789abcdef01234567/clone/0123456789abcdef01234567",
		"/api/embed/editor/uploads/splat-file/0123456789abcdef0123456789abcdef",
		"/assets/i/0123456789abcdef01234567/u/0123456789abcdef01234567/lod/0123456789abcdef/lod-meta.json",
		"/assets/i/a/u/b/lod/t/0_0.webp",
		"/assets/i/a/u/b/lod/t/nested/dir/1_2-3.webp",
		// A signed asset URL: <expiry base 36>.<24 base64url characters>.
		"/assets/s/mz3k9q0.AbC-_dEf0123456789ghIJ/i/a/u/b/file/t/scene.splat",
		"/assets/i/a/u/b/file/t/my%20scene%C3%A9.splat",
		"/assets/i/a/u/b/file/t/caf%c3%a9.ply",
		"/assets/i/a/u/b/file/t/raw-é.ply", // not ASCII, but no normaliser changes it
		"/assets/i/a/u/b/file/t/50%25.splat",
		"/assets/i/a/u/b/file/t/50%25zz.splat",
		"/assets/x/.hidden/a..b/.../x.",
		"/assets/x/..;/metrics", // "..;" is a name, not a dot segment, for Go and fasthttp
		"/embed/viewer",
		"/docs/assets/app.js",
		usage + "customer-42/usage",
		usage + "team%2Fada/usage",
		usage + "team%2fada/usage/",
		usage + "%2E%2E/usage",
		usage + "%2e%2e%2f%2e%2e%2fmetrics/usage",
		usage + "back%5Cslash/usage",
		usage + "50%25off/usage",
		usage + "a%252e/usage",
		usage + "user@example.com%7Ctenant:7/usage",
		"/ADMIN/V1/Integrations/i1/Customers/team%2Fada/usage",
	}
	for _, p := range accepted {
		require.Empty(t, pathProblem(p), "%q", p)
		requireNormalisesToItsDecoding(t, p)
	}

	refused := map[string]string{
		"":                               "must start with /",
		"metrics":                        "must start with /",
		"*":                              "must start with /",
		"/assets/%2e%2e/metrics":         "percent-encoded dots",
		"/assets/%2E%2E/%2E%2E/metrics":  "percent-encoded dots",
		"/assets/.%2e/metrics":           "percent-encoded dots",
		"/assets/..%2fmetrics":           "percent-encoded slashes",
		"/assets/a%2Fb":                  "percent-encoded slashes",
		"/assets/%252e%252e/metrics":     "percent-encoded twice",
		"/assets/%25%32%65%25%32%65/x":   "percent-encoded twice",
		"/assets/%252F":                  "percent-encoded twice",
		`/assets\..\metrics`:             "backslashes",
		`/assets/a\b`:                    "backslashes",
		"/assets/%5c..%5cmetrics":        "backslashes",
		"/assets/../readyz":              ". or .. segments",
		"/api/v1/../../metrics":          ". or .. segments",
		"/./metrics":                     ". or .. segments",
		"/assets/x/.":                    ". or .. segments",
		"/assets/x/..":                   ". or .. segments",
		"/assets/x/../":                  ". or .. segments",
		"//metrics":                      "empty segments",
		"/assets//x":                     "empty segments",
		"/assets/x//":                    "empty segments",
		"/assets/a\x00":                  "control characters",
		"/assets/a%00":                   "control characters",
		"/assets/a%0d%0aX-Injected:%201": "control characters",
		"/assets/a\tb":                   "control characters",
		"/assets/a b":                    "control characters",
		"/assets/a%7F":                   "control characters",
		"/assets/a\x7f":                  "control characters",
		"/assets/50%":                    "malformed",
		"/assets/%2":                     "malformed",
		"/assets/%zz":                    "malformed",
		"/assets/%%32%65":                "malformed",
		usage + "../usage":               ". or .. segments",
		usage + "./usage":                ". or .. segments",
		usage + `a\b/usage`:              "backslashes",
		usage + "a%00/usage":             "control characters",
		usage + "a%/usage":               "malformed",
		usage + "/usage":                 "empty segments",
		usage + "a%2Fb/usage/more":       "percent-encoded slashes", // not the usage route
		usage + "a%2Fb/usagE/x":          "percent-encoded slashes",
		"/admin/v1/integrations/%2e%2e/customers/x/usage": "percent-encoded dots", // the id segment is not opaque
		"/admin/v1/integrations/i1/customerz/a%2Fb/usage": "percent-encoded slashes",
	}
	for p, want := range refused {
		require.Contains(t, pathProblem(p), want, "%q", p)
	}
}

// requireNormalisesToItsDecoding holds an accepted path to the canonical promise: fasthttp's
// normalisation and Go's path.Clean change nothing but the decoding of its escapes, and a second
// decoding changes nothing more. The opaque segment of the customer usage route is held to its
// own rule (one segment whatever it encodes, no control character) and left out of the rest.
func requireNormalisesToItsDecoding(t testing.TB, p string) {
	t.Helper()
	segs := strings.Split(p[1:], "/")
	if i := opaqueSegment(segs); i >= 0 {
		id, err := url.PathUnescape(segs[i])
		require.NoError(t, err, "%q", p)
		require.NotContains(t, []string{"", ".", ".."}, segs[i], "%q", p)
		require.NotContains(t, segs[i], `\`, "%q", p)
		for _, r := range id {
			require.False(t, r < 0x20 || r == 0x7f, "%q: control character in the opaque segment", p)
		}
		segs[i] = "opaque"
		p = "/" + strings.Join(segs, "/")
	}
	decoded, err := url.PathUnescape(p)
	require.NoError(t, err, "%q", p)
	var u fasthttp.URI
	u.SetPath(p)
	require.Equal(t, decoded, string(u.Path()), "fasthttp normalises %q to more than its decoding", p)
	want := decoded
	if want != "/" {
		want = strings.TrimSuffix(want, "/")
	}
	require.Equal(t, want, path.Clean(decoded), "path.Clean changes the decoding of %q", p)
	require.NotContains(t, decoded, `\`, "%q decodes to a backslash", p)
	if again, err := url.PathUnescape(decoded); err == nil {
		require.Equal(t, decoded, again, "%q decodes to another escape", p)
	}
}

// TestPathProblemAllocatesNothing: the check runs on every request; a canonical path without
// escapes, the common case, costs no allocation.
func TestPathProblemAllocatesNothing(t *testing.T) {
	for _, p := range []string{"/api/v1/splats/0123456789abcdef01234567/clone", "/assets/i/a/u/b/lod/t/0_0.webp", "/"} {
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = pathProblem(p) }), p)
	}
}
