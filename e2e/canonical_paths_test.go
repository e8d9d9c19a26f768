//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// canonicalTraversals are request targets that a normaliser reads as another path than the one
// written. Before issue 26 the split gateway matched the first one on its public asset route and
// forwarded it normalised: the scene service answered its Prometheus metrics, 200.
var canonicalTraversals = []string{
	"/assets/%2e%2e/metrics",
	"/assets/../readyz",
	"/assets/%2E%2E/%2E%2E/metrics",
	"/assets/..%2fmetrics",
	"/assets/%252e%252e/metrics",
	`/assets\..\metrics`,
	"/api/v1/../../metrics",
	"/./metrics",
	"//metrics",
}

// rawAnswer is an answer to a raw request.
type rawAnswer struct {
	status int
	body   []byte
	json   map[string]any
}

// rawGet sends "GET <target> HTTP/1.1" to base's host as bytes on a fresh connection, so that
// nothing between the test and the server (Go's URL parser, a client) changes the target.
func rawGet(t *testing.T, base, target, authorization string) rawAnswer {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	req := "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
	if authorization != "" {
		req += "Authorization: " + authorization + "\r\n"
	}
	_, err = io.WriteString(conn, req+"\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, target)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, target)
	a := rawAnswer{status: resp.StatusCode, body: body}
	_ = json.Unmarshal(body, &a.json)
	return a
}

// requireRawEnvelope checks the spec's error envelope on a raw answer.
func requireRawEnvelope(t *testing.T, a rawAnswer, status int, what string) {
	t.Helper()
	require.Equal(t, status, a.status, "%s: %s", what, a.body)
	require.Equal(t, "error", a.json["status"], "%s: %s", what, a.body)
	msg, _ := a.json["message"].(string)
	require.NotEmpty(t, msg, "%s: %s", what, a.body)
}

// TestCanonicalPaths (issue 26, item 2): both gateways (the in-process product and the split
// binaries) refuse every non-canonical path with 400, the envelope and code NON_CANONICAL_PATH,
// credentials or not, before any route; the product's own URLs keep working through the split
// gateway (a signed asset URL, the operator's usage of a customer whose id holds a slash); and
// every service's and the worker's /metrics, on its private port, answers 401 with the envelope
// without the admin token and 200 with it.
func TestCanonicalPaths(t *testing.T) {
	sp := chaosSplit(t, nil)
	adminAuth := "Bearer " + env.State.AdminToken
	gateways := map[string]string{"in-process": env.URL, "split": sp.URL}
	for name, base := range gateways {
		for _, target := range canonicalTraversals {
			for _, auth := range []string{"", adminAuth} {
				what := name + " GET " + target
				a := rawGet(t, base, target, auth)
				requireRawEnvelope(t, a, 400, what)
				require.Equal(t, "NON_CANONICAL_PATH", a.json["code"], what)
				require.NotEmpty(t, a.json["issues"], what)
				require.NotContains(t, string(a.body), "go_goroutines", what)
			}
		}
	}

	// The product's own URLs, through both gateways: a private scene's signed asset URL (token
	// with '.', '-' and '_'), and customer ids with a slash or of two dots in the operator's
	// usage route, whose id segment may hold any escape but of a control character.
	a := newTenant(t)
	sc := commitScene(t, a, "canonical", 4)
	signed := sc["splatUrl"].(string)
	require.Contains(t, signed, "/assets/s/")
	target, ok := strings.CutPrefix(signed, env.URL)
	require.True(t, ok, signed)
	ensureCustomer(t, a, "team/ada", map[string]any{"limitBytes": 4096})
	ensureCustomer(t, a, "..", map[string]any{"limitBytes": 2048})
	usage := "/admin/v1/integrations/" + a.IntegrationID + "/customers/"
	for name, base := range gateways {
		got := rawGet(t, base, target, "")
		require.Equal(t, 200, got.status, "%s %s: %s", name, target, got.body)
		require.True(t, bytes.Equal(splatBytes(4), got.body), "%s: the scene's bytes", name)
		for seg, limit := range map[string]float64{"team%2Fada": 4096, "%2E%2E": 2048} {
			got = rawGet(t, base, usage+seg+"/usage", adminAuth)
			require.Equal(t, 200, got.status, "%s %s: %s", name, seg, got.body)
			storage := got.json["usage"].(map[string]any)["storage"].(map[string]any)
			require.Equal(t, limit, storage["limitBytes"], name+" "+seg)
		}
		requireRawEnvelope(t, rawGet(t, base, usage+"../usage", adminAuth), 400, name+" an unescaped .. id")
	}
	// The SDK escapes such an id whole.
	u, err := operatorSDK(t).AdminCustomerUsage(context.Background(), a.IntegrationID, "..")
	require.NoError(t, err)
	require.EqualValues(t, 2048, u.Storage.LimitBytes)

	// Metrics: the admin token, on a private port too.
	for _, name := range []string{"user", "scene", "session", "worker", "gateway"} {
		base := sp.ServiceURL(name)
		for i, auth := range []string{"", "Bearer not-the-admin-token", env.State.AdminToken} {
			requireRawEnvelope(t, rawGet(t, base, "/metrics", auth), 401, fmt.Sprintf("%s /metrics, bad credential %d", name, i))
		}
		got := rawGet(t, base, "/metrics", adminAuth)
		require.Equal(t, 200, got.status, "%s: %s", name, got.body)
		require.Contains(t, string(got.body), "go_goroutines", name)
	}
}
