//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestKeyAuthentication(t *testing.T) {
	a, b := newTenant(t), newTenant(t)
	path := "/api/v1/external-user"
	ok := do(t, "PUT", path, a.keys("cust-1"), map[string]any{})
	require.Equal(t, 200, ok.Status, string(ok.Raw))

	cases := map[string]map[string]string{
		"no credentials":       {"X-Service-External-User-Id": "cust-1"},
		"no public key":        {"Authorization": "Bearer " + a.SecretKey, "X-Service-External-User-Id": "cust-1"},
		"no secret":            {"X-Service-Public-Key": a.PublicKey, "X-Service-External-User-Id": "cust-1"},
		"wrong secret":         {"Authorization": "Bearer msk_wrong", "X-Service-Public-Key": a.PublicKey, "X-Service-External-User-Id": "cust-1"},
		"unknown public key":   {"Authorization": "Bearer " + a.SecretKey, "X-Service-Public-Key": "mpk_nope", "X-Service-External-User-Id": "cust-1"},
		"foreign public key":   {"Authorization": "Bearer " + a.SecretKey, "X-Service-Public-Key": b.PublicKey, "X-Service-External-User-Id": "cust-1"},
		"public key as bearer": {"Authorization": "Bearer " + a.PublicKey, "X-Service-Public-Key": a.PublicKey, "X-Service-External-User-Id": "cust-1"},
		"not bearer":           {"Authorization": a.SecretKey, "X-Service-Public-Key": a.PublicKey, "X-Service-External-User-Id": "cust-1"},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			for _, method := range []string{"GET", "PUT"} {
				requireEnvelope(t, do(t, method, path, h, nil), 401)
			}
		})
	}
}

func TestRevokedIntegrationAnswers410(t *testing.T) {
	a := newTenant(t)
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", a.keys("c"), nil).Status)
	r := do(t, "POST", "/admin/v1/integrations/"+a.IntegrationID+"/revoke", admin(), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user", a.keys("c"), nil), 410)
	requireEnvelope(t, do(t, "PUT", "/api/v1/external-user", a.keys("c"), nil), 410)
	// The secret bearer scheme (embed-session minting) answers 410 too.
	requireEnvelope(t, do(t, "POST", "/api/editor/embed-sessions",
		map[string]string{"Authorization": "Bearer " + a.SecretKey}, map[string]any{"publicKey": a.PublicKey}), 410)
	// A wrong secret for a revoked integration learns nothing: 401.
	h := a.keys("c")
	h["Authorization"] = "Bearer msk_guess"
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user", h, nil), 401)
	// Revoked keys cannot be rotated back to life.
	requireEnvelope(t, do(t, "POST", "/admin/v1/integrations/"+a.IntegrationID+"/rotate", admin(), nil), 410)
}

func TestRotateReplacesSecret(t *testing.T) {
	a := newTenant(t)
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", a.keys("c"), nil).Status)
	r := do(t, "POST", "/admin/v1/integrations/"+a.IntegrationID+"/rotate", admin(), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	in := r.Body["integration"].(map[string]any)
	newSecret := in["secretKey"].(string)
	require.NotEqual(t, a.SecretKey, newSecret)
	require.Equal(t, a.PublicKey, in["publicKey"], "rotation keeps the public key")
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user", a.keys("c"), nil), 401)
	a.SecretKey = newSecret
	require.Equal(t, 200, do(t, "GET", "/api/v1/external-user", a.keys("c"), nil).Status)
}

func TestRestAccessOffAnswers403(t *testing.T) {
	a := newIntegration(t, newAccount(t, "free", 10), map[string]any{"restAccess": false})
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user", a.keys("c"), nil), 403)
	r := do(t, "PATCH", "/admin/v1/integrations/"+a.IntegrationID, admin(), map[string]any{"restAccess": true})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", a.keys("c"), nil).Status)
}

func TestExternalUserHeaderRules(t *testing.T) {
	a := newTenant(t)
	long := strings.Repeat("x", 257)
	issues := requireEnvelope(t, do(t, "PUT", "/api/v1/external-user", a.keys(long), nil), 400)
	require.True(t, issuesMention(issues, "X-Service-External-User-Id"))
	// Exactly 256 characters, multi-byte included, is fine.
	edge := strings.Repeat("é", 256)
	r := do(t, "PUT", "/api/v1/external-user", a.keys(edge), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, edge, r.Body["externalUser"].(map[string]any)["externalUserId"])
	// Missing EU on the external-user surface: 400.
	for _, m := range []string{"GET", "PUT"} {
		requireEnvelope(t, do(t, m, "/api/v1/external-user", a.keys(""), nil), 400)
	}
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user/usage", a.keys(""), nil), 400)

	// Line breaks and other control characters cannot be sent with net/http; speak raw HTTP.
	for name, value := range map[string]string{"carriage return": "ab\rcd", "tab": "ab\tcd", "nul": "ab\x00cd"} {
		t.Run(name, func(t *testing.T) {
			status, body := rawRequest(t, "GET /api/v1/external-user HTTP/1.1\r\nHost: x\r\n"+
				"Authorization: Bearer "+a.SecretKey+"\r\nX-Service-Public-Key: "+a.PublicKey+"\r\n"+
				"X-Service-External-User-Id: "+value+"\r\nConnection: close\r\n\r\n")
			require.Equal(t, 400, status, body)
			require.Contains(t, body, `"status":"error"`)
		})
	}
}

// rawRequest writes req to the gateway and returns the status code and body.
func rawRequest(t *testing.T, req string) (int, string) {
	t.Helper()
	resp, body, _ := rawExchange(t, req)
	return resp.StatusCode, string(body)
}

func TestAuthenticationHitsTheCacheNotTheDatabase(t *testing.T) {
	a := newTenant(t)
	// The counters are the in-process gateway's: the requests go to it, scaled out or not.
	gw := env.ProcessURL
	require.Equal(t, 200, doAt(t, gw, "PUT", "/api/v1/external-user", a.keys("c"), nil).Status)
	// The NOTIFY of this integration's own creation flushes the cache once more, shortly after;
	// wait until two calls in a row are served from the cache.
	require.Eventually(t, func() bool {
		n := env.Process.Integrations.Loads()
		doAt(t, gw, "GET", "/api/v1/external-user", a.keys("c"), nil)
		doAt(t, gw, "GET", "/api/v1/external-user", a.keys("c"), nil)
		return env.Process.Integrations.Loads() == n
	}, 5*time.Second, 50*time.Millisecond)
	// Other tests' integration changes flush the whole cache when their NOTIFY arrives, which
	// may land inside a window: some window of 20 requests must need no lookup at all (without
	// the cache every request of every window would).
	var before int64
	require.Eventually(t, func() bool {
		before = env.Process.Integrations.Loads()
		for i := 0; i < 20; i++ {
			require.Equal(t, 200, doAt(t, gw, "GET", "/api/v1/external-user", a.keys("c"), nil).Status)
		}
		return env.Process.Integrations.Loads() == before
	}, 10*time.Second, 50*time.Millisecond, "cached integrations need no lookup")
	// A change flushes the cache, so the next request reads the row again.
	require.Equal(t, 200, doAt(t, gw, "PATCH", "/admin/v1/integrations/"+a.IntegrationID, admin(), map[string]any{"productSlug": "new.example.com"}).Status)
	r := doAt(t, gw, "GET", "/api/v1/external-user", a.keys("c"), nil)
	require.Equal(t, "new.example.com", r.Body["externalUser"].(map[string]any)["productSlug"])
	require.Greater(t, env.Process.Integrations.Loads(), before)
}

func TestSessionBearerRejectsWhatIsNotASessionToken(t *testing.T) {
	a := newTenant(t)
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer eyJhbGciOiJub25lIn0.e30."}, {"Authorization": "Bearer " + a.SecretKey}} {
		requireEnvelope(t, do(t, "POST", "/api/embed/views", h, map[string]any{"splatId": "x"}), 401)
	}
}
