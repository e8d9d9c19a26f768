//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOperatorCreatesAccountAndIntegration(t *testing.T) {
	r := do(t, "POST", "/admin/v1/accounts", admin(), map[string]any{
		"name": "Acme", "plan": "enterprise", "storageBundleBytes": 5 << 30, "maxSplats": 100, "overage": true,
	})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	acct := r.Body["account"].(map[string]any)
	require.Regexp(t, `^[0-9a-f]{24}$`, acct["id"])
	require.Equal(t, "Acme", acct["name"])
	require.Equal(t, "enterprise", acct["plan"])
	require.EqualValues(t, 5<<30, acct["storageBundleBytes"])
	require.EqualValues(t, 100, acct["maxSplats"])
	require.Equal(t, true, acct["overage"])
	require.EqualValues(t, 0, acct["usedBytes"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, acct["createdAt"])

	r = do(t, "POST", "/admin/v1/integrations", admin(), map[string]any{
		"accountId": acct["id"], "productSlug": "acme.example.com", "capabilities": []string{"viewer"},
	})
	require.Equal(t, 201, r.Status, string(r.Raw))
	in := r.Body["integration"].(map[string]any)
	require.Regexp(t, `^[0-9a-f]{24}$`, in["id"])
	require.Equal(t, acct["id"], in["accountId"])
	require.True(t, strings.HasPrefix(in["publicKey"].(string), "mpk_"))
	secret := in["secretKey"].(string)
	require.True(t, strings.HasPrefix(secret, "msk_"))
	require.Equal(t, true, in["restAccess"], "restAccess defaults to true")
	require.Equal(t, []any{"viewer"}, in["capabilities"])

	// The secret is shown once: reading the integration back never returns it.
	r = do(t, "GET", "/admin/v1/integrations/"+in["id"].(string), admin(), nil)
	require.Equal(t, 200, r.Status)
	_, has := r.Body["integration"].(map[string]any)["secretKey"]
	require.False(t, has)

	// Only a SHA-256 hash of the secret is stored.
	var hash []byte
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		"SELECT secret_hash FROM integrations WHERE id = $1", in["id"]).Scan(&hash))
	want := sha256.Sum256([]byte(secret))
	require.Equal(t, want[:], hash)
	var leaks int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM integrations WHERE row_to_json(integrations)::text LIKE '%' || $1 || '%'", secret[4:]).Scan(&leaks))
	require.Zero(t, leaks, "the secret key must not be stored anywhere in the row")
}

func TestOperatorAPIRequiresAdminToken(t *testing.T) {
	body := map[string]any{"name": "x", "plan": "free", "storageBundleBytes": 1}
	for name, h := range map[string]map[string]string{
		"missing": nil,
		"wrong":   {"Authorization": "Bearer not-the-token"},
		"basic":   {"Authorization": "Basic " + env.State.AdminToken},
		"secret":  {"Authorization": "Bearer " + newTenant(t).SecretKey},
	} {
		t.Run(name, func(t *testing.T) {
			requireEnvelope(t, do(t, "POST", "/admin/v1/accounts", h, body), 401)
		})
	}
}

func TestOperatorValidation(t *testing.T) {
	cases := []struct {
		name  string
		body  any
		issue string
	}{
		{"bad plan", map[string]any{"name": "a", "plan": "gold", "storageBundleBytes": 1}, "plan"},
		{"negative bundle", map[string]any{"name": "a", "plan": "free", "storageBundleBytes": -1}, "storageBundleBytes"},
		{"fractional bundle", map[string]any{"name": "a", "plan": "free", "storageBundleBytes": 1.5}, "storageBundleBytes"},
		{"missing name", map[string]any{"plan": "free", "storageBundleBytes": 1}, "name: required"},
		{"overage off enterprise", map[string]any{"name": "a", "plan": "pro", "storageBundleBytes": 1, "overage": true}, "overage"},
		{"unknown field", map[string]any{"name": "a", "plan": "free", "storageBundleBytes": 1, "color": "red"}, "color: unknown field"},
		{"malformed", `{"name": `, "body"},
		{"array", `[]`, "body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "POST", "/admin/v1/accounts", admin(), c.body), 400)
			require.True(t, issuesMention(issues, c.issue), "issues %v should mention %q", issues, c.issue)
		})
	}

	acct := newAccount(t, "free", 10)
	issues := requireEnvelope(t, do(t, "POST", "/admin/v1/integrations", admin(), map[string]any{
		"accountId": acct, "productSlug": "bad slug!", "capabilities": []string{"viewer", "admin"}, "restAccess": "yes",
	}), 400)
	require.True(t, issuesMention(issues, "productSlug"))
	require.True(t, issuesMention(issues, "capabilities[1]"))
	require.True(t, issuesMention(issues, "restAccess"))

	requireEnvelope(t, do(t, "POST", "/admin/v1/integrations", admin(), map[string]any{
		"accountId": "0123456789abcdef01234567", "productSlug": "a.example", "capabilities": []string{"viewer"},
	}), 404)
	requireEnvelope(t, do(t, "PATCH", "/admin/v1/accounts/nothex", admin(), map[string]any{"name": "x"}), 404)
}

func TestOperatorPatchesAccount(t *testing.T) {
	id := newAccount(t, "pro", 100)
	r := do(t, "PATCH", "/admin/v1/accounts/"+id, admin(), map[string]any{"plan": "enterprise", "overage": true, "maxSplats": 7})
	require.Equal(t, 200, r.Status, string(r.Raw))
	acct := r.Body["account"].(map[string]any)
	require.Equal(t, "enterprise", acct["plan"])
	require.Equal(t, true, acct["overage"])
	require.EqualValues(t, 7, acct["maxSplats"])
	require.EqualValues(t, 100, acct["storageBundleBytes"], "omitted fields are unchanged")

	r = do(t, "PATCH", "/admin/v1/accounts/"+id, admin(), map[string]any{"maxSplats": nil})
	require.Equal(t, 200, r.Status)
	require.Nil(t, r.Body["account"].(map[string]any)["maxSplats"])

	// Leaving enterprise while overage stays on is refused, and nothing changes.
	requireEnvelope(t, do(t, "PATCH", "/admin/v1/accounts/"+id, admin(), map[string]any{"plan": "pro"}), 400)
	r = do(t, "GET", "/admin/v1/accounts/"+id, admin(), nil)
	require.Equal(t, "enterprise", r.Body["account"].(map[string]any)["plan"])

	requireEnvelope(t, do(t, "PATCH", "/admin/v1/accounts/"+id, admin(), map[string]any{}), 400)
}
