package gateway

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// traversals are the paths of the measured gap (issue 26: /assets/%2e%2e/metrics answered the
// scene service's metrics through a split gateway) and their variants.
var traversals = []string{
	"/assets/%2e%2e/metrics",
	"/assets/../readyz",
	"/assets/%2E%2E/%2E%2E/metrics",
	"/assets/..%2fmetrics",
	"/assets/%252e%252e/metrics",
	`/assets\..\metrics`,
	"/api/v1/../../metrics",
	"/./metrics",
	"//metrics",
	"/assets/%2e%2e/debug/pprof/",
	"/assets/%2e%2e/healthz",
	"/assets/%25%32%65%25%32%65/metrics",
	"/admin/v1/%2e%2e/%2e%2e/metrics",
	"/api/embed/%2e%2e/%2e%2e/readyz",
	"/admin/v1/integrations/i1/customers/x/usage/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/metrics",
	"http://gateway.test/assets/../metrics",
}

// authorizations are the Authorization headers a harness request may carry: none, the admin
// token (admits /admin) and a session the fake verifier accepts (admits /api/embed).
var authorizations = []string{"", "Bearer " + harnessAdmin, "Bearer good"}

// TestGatewayRefusesNonCanonicalPaths: through a split gateway, every traversal is a 400 with
// the envelope and code NON_CANONICAL_PATH and reaches no service, whatever the credential; a
// canonical path reaches its service exactly as the client wrote it, query string included
// (the streamer sent the normalised path before: /assets/%2e%2e/metrics went on as /metrics).
func TestGatewayRefusesNonCanonicalPaths(t *testing.T) {
	h := newPathHarness(t)
	for _, target := range traversals {
		for _, auth := range authorizations {
			a := h.send(t, target, auth)
			require.True(t, a.refused(), "%s (%q): %d %v", target, auth, a.status, a.body)
			require.Equal(t, "error", a.body["status"])
			require.NotEmpty(t, a.body["message"])
			require.NotEmpty(t, a.body["issues"])
			require.Nil(t, a.hit, "%s reached a service", target)
		}
	}

	forwarded := []struct{ target, auth, upstream string }{
		// Lower-case escapes and a query a normaliser would not keep: the scene service gets them.
		{"/assets/i/a/u/b/file/t/caf%c3%a9.splat?x=/../%2e%2e//", "", "scene"},
		{"/assets/s/mz3k9q0.AbC-_dEf0123456789ghIJ/i/a/u/b/lod/t/lod-meta.json", "", "scene"},
		{"/assets/i/a/u/b/lod/t/0_0.webp", "", "scene"},
		{usage + "team%2Fada/usage?window=7", "Bearer " + harnessAdmin, "user"},
		{usage + "%2E%2E%2F%2E%2E%2Fmetrics/usage", "Bearer " + harnessAdmin, "user"},
		{"/api/embed/splats/0123456789abcdef01234567", "Bearer good", "session"},
	}
	for _, f := range forwarded {
		a := h.send(t, f.target, f.auth)
		require.Equal(t, 200, a.status, "%s: %v", f.target, a.body)
		require.NotNil(t, a.hit, f.target)
		require.Equal(t, f.upstream, a.hit.upstream, f.target)
		require.Equal(t, f.target, a.hit.uri, "the service gets the request target as sent")
		require.Equal(t, "/*", a.hit.route, f.target)
	}
}

// FuzzCanonicalPath sends fuzzed request targets as raw bytes to a split gateway whose upstreams
// are service-like apps (canonical_harness_test.go) and holds it to the canonical promise: the
// gateway refuses exactly the paths pathProblem names (400, NON_CANONICAL_PATH, nothing
// forwarded); an accepted path normalises to nothing but its decoding, under fasthttp and Go
// alike; what reaches a service is the raw path the gateway checked; and no accepted path
// reaches a service's /metrics, /readyz, /healthz or /debug.
func FuzzCanonicalPath(f *testing.F) {
	seeds := append([]string{
		"/", "/metrics", "/readyz", "/debug/pprof/", "/METRICS", "/assets/metrics", "/assets/x/..;/metrics",
		"/assets/i/a/u/b/lod/t/lod-meta.json", "/assets/s/mz3k9q0.AbC-_dEf0123456789ghIJ/i/a/u/b/file/t/a.splat",
		"/assets/i/a/u/b/file/t/caf%c3%a9.splat?x=/../metrics", "/assets/x#/../../metrics",
		usage + "team%2Fada/usage", usage + "%2E%2E%2F%2E%2E%2Fmetrics/usage", usage + "../usage",
		"/api/embed/splats/x", "/embed/viewer?session=good&next=/../metrics", "/api/v1/splats/%2e",
	}, traversals...)
	for _, s := range seeds {
		for i := range authorizations {
			f.Add(s, byte(i))
		}
	}
	h := newPathHarness(f)
	f.Fuzz(func(t *testing.T, target string, auth byte) {
		// Not one request target: the line would end or split there.
		if target == "" || len(target) > 4096 || strings.ContainsAny(target, "\r\n ") {
			t.Skip()
		}
		// The server parses the target like this (RequestCtx.URI with the Host header).
		var u fasthttp.URI
		parsed := u.Parse([]byte("gateway.test"), []byte(target)) == nil
		raw := string(u.PathOriginal())
		problem := pathProblem(raw)
		if parsed && problem == "" {
			requireNormalisesToItsDecoding(t, raw)
		}
		a := h.send(t, target, authorizations[int(auth)%len(authorizations)])
		require.NotEqual(t, 500, a.status, "%q: %v", target, a.body)
		if a.hit != nil {
			require.False(t, serviceRoute(a.hit.route), "%q reached the %s service's %s", target, a.hit.upstream, a.hit.route)
		}
		if !parsed {
			// fasthttp refuses the target before any handler (a control byte): nothing to check.
			return
		}
		if problem != "" {
			require.True(t, a.refused(), "%q (%s): %d %v", target, problem, a.status, a.body)
			require.Nil(t, a.hit, "%q was refused and forwarded", target)
			return
		}
		require.False(t, a.refused(), "%q is canonical: %v", target, a.body)
		if a.hit != nil {
			require.Equal(t, raw, a.hit.path, "%q: the service got another path than the one checked", target)
		}
	})
}
