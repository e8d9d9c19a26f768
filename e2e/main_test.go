//go:build e2e

package e2e

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/testenv"
)

// env is the one environment every test of this binary shares.
var env *testenv.Env

func TestMain(m *testing.M) {
	// Listing the tests (go test -list, and bin/testrun splitting them into shards) needs no stack.
	flag.Parse()
	if flag.Lookup("test.list").Value.String() != "" {
		os.Exit(m.Run())
	}
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cannot start the test stack:", err)
		os.Exit(1)
	}
	if err := watchContract(); err != nil {
		env.Stop()
		fmt.Fprintln(os.Stderr, "e2e: the OpenAPI document does not load:", err)
		os.Exit(1)
	}
	code := m.Run()
	if n := contract.leftover(); n > 0 && code == 0 {
		code = 1 // answers outside any test's reach broke the document; leftover printed them
	}
	env.Stop()
	os.Exit(code)
}

// tenant is an account with one integration, created through the operator API.
type tenant struct {
	AccountID     string
	IntegrationID string
	PublicKey     string
	SecretKey     string
	ProductSlug   string
}

func admin() map[string]string {
	return map[string]string{"Authorization": "Bearer " + env.State.AdminToken}
}

func do(t *testing.T, method, path string, headers map[string]string, body any) *testenv.Response {
	t.Helper()
	return doAt(t, env.URL, method, path, headers, body)
}

func doAt(t *testing.T, base, method, path string, headers map[string]string, body any) *testenv.Response {
	t.Helper()
	r, err := testenv.Do(base, method, path, headers, body)
	require.NoError(t, err)
	contract.report(t)
	return r
}

// newAccount creates an account with the given plan and bundle.
func newAccount(t *testing.T, plan string, bundle int64) string {
	t.Helper()
	r := do(t, "POST", "/admin/v1/accounts", admin(), map[string]any{
		"name": "acct-" + t.Name(), "plan": plan, "storageBundleBytes": bundle, "maxSplats": nil, "overage": false,
	})
	require.Equal(t, 201, r.Status, string(r.Raw))
	return r.Body["account"].(map[string]any)["id"].(string)
}

// newIntegration creates an integration under accountID with REST access on.
func newIntegration(t *testing.T, accountID string, extra map[string]any) tenant {
	t.Helper()
	body := map[string]any{"accountId": accountID, "productSlug": "shop.example.com", "capabilities": []string{"viewer", "editor"}}
	for k, v := range extra {
		body[k] = v
	}
	r := do(t, "POST", "/admin/v1/integrations", admin(), body)
	require.Equal(t, 201, r.Status, string(r.Raw))
	in := r.Body["integration"].(map[string]any)
	return tenant{AccountID: accountID, IntegrationID: in["id"].(string), PublicKey: in["publicKey"].(string),
		SecretKey: in["secretKey"].(string), ProductSlug: in["productSlug"].(string)}
}

// newTenant makes a fresh pro account with a 1 GiB bundle and one integration.
func newTenant(t *testing.T) tenant {
	t.Helper()
	return newIntegration(t, newAccount(t, "pro", 1<<30), nil)
}

// keys returns the secret + public key headers, plus EU when eu is not empty.
func (tn tenant) keys(eu string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + tn.SecretKey, "X-Service-Public-Key": tn.PublicKey}
	if eu != "" {
		h["X-Service-External-User-Id"] = eu
	}
	return h
}

// requireEnvelope checks the spec's error envelope and returns its issues.
func requireEnvelope(t *testing.T, r *testenv.Response, status int) []any {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Raw))
	require.Equal(t, "error", r.Body["status"], string(r.Raw))
	msg, ok := r.Body["message"].(string)
	require.True(t, ok && msg != "", "message must be a non-empty string: %s", r.Raw)
	issues, _ := r.Body["issues"].([]any)
	if status == 400 {
		require.NotEmpty(t, issues, "a 400 names its problems: %s", r.Raw)
	}
	return issues
}

// issuesMention reports whether some issue contains substr.
func issuesMention(issues []any, substr string) bool {
	for _, i := range issues {
		if s, ok := i.(string); ok && strings.Contains(s, substr) {
			return true
		}
	}
	return false
}

// inProcessOnly skips a test that observes the in-process product's own instruments (its
// metrics registry, its recorded spans) when the suite runs scaled out (testenv.ReplicasEnv):
// requests then reach the replicas, and workflows run on any of the workers.
func inProcessOnly(t *testing.T) {
	t.Helper()
	if env.Replicas != nil {
		t.Skip("observes the in-process product's instruments; scaled out, the work runs in the replicas")
	}
}
