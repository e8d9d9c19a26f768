//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/internal/uploadrules"
)

func eu(r map[string]any) map[string]any { return r["externalUser"].(map[string]any) }

func TestCreateCustomerDefaultsAndShape(t *testing.T) {
	a := newTenant(t)
	r := do(t, "PUT", "/api/v1/external-user", a.keys("cust-42"), map[string]any{"displayName": "Ada"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	u := eu(r.Body)
	require.Regexp(t, `^[0-9a-f]{24}$`, u["id"])
	require.Equal(t, a.IntegrationID, u["integrationId"])
	require.Equal(t, "cust-42", u["externalUserId"])
	require.Equal(t, a.ProductSlug, u["productSlug"])
	require.Equal(t, "Ada", u["displayName"])
	require.Nil(t, u["avatarUrl"])
	require.Nil(t, u["emailHash"])
	require.Nil(t, u["metadata"])
	require.Equal(t, "active", u["status"])
	require.Equal(t, "active", u["billingState"])
	require.EqualValues(t, 0, u["usedBytes"])
	require.EqualValues(t, 1<<30, u["limitBytes"], "limitBytes defaults to the account storage bundle")
	require.EqualValues(t, 1<<30, u["remainingBytes"])
	require.EqualValues(t, 0, u["percentUsed"])
	require.Nil(t, u["maxSplats"])
	require.Nil(t, u["deletedAt"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, u["createdAt"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, u["updatedAt"])
	for _, k := range []string{"id", "integrationId", "externalUserId", "productSlug", "displayName", "avatarUrl",
		"emailHash", "metadata", "status", "billingState", "usedBytes", "limitBytes", "maxSplats", "remainingBytes",
		"percentUsed", "deletedAt", "createdAt", "updatedAt"} {
		require.Contains(t, u, k)
	}

	g := do(t, "GET", "/api/v1/external-user", a.keys("cust-42"), nil)
	require.Equal(t, 200, g.Status)
	require.Equal(t, u, eu(g.Body))
}

func TestUpdateKeepsOmittedFields(t *testing.T) {
	a := newTenant(t)
	h := a.keys("u1")
	r := do(t, "PUT", "/api/v1/external-user", h, map[string]any{
		"limitBytes": 1000, "maxSplats": 5, "displayName": "Bo", "avatarUrl": "https://cdn.example.com/a.png",
		"emailHash": "abcdef0123456789", "metadata": map[string]any{"tier": "gold", "n": 3, "ok": true, "x": nil},
	})
	require.Equal(t, 200, r.Status, string(r.Raw))
	before := eu(r.Body)

	r = do(t, "PUT", "/api/v1/external-user", h, map[string]any{"status": "inactive"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	after := eu(r.Body)
	require.Equal(t, "inactive", after["status"])
	for _, k := range []string{"id", "limitBytes", "maxSplats", "displayName", "avatarUrl", "emailHash", "metadata", "createdAt"} {
		require.Equal(t, before[k], after[k], k)
	}
	require.Equal(t, map[string]any{"tier": "gold", "n": float64(3), "ok": true, "x": nil}, after["metadata"])

	// null removes the scene cap and clears optional labels.
	r = do(t, "PUT", "/api/v1/external-user", h, map[string]any{"maxSplats": nil, "displayName": nil, "metadata": nil})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Nil(t, eu(r.Body)["maxSplats"])
	require.Nil(t, eu(r.Body)["displayName"])
	require.Nil(t, eu(r.Body)["metadata"])
	require.EqualValues(t, 1000, eu(r.Body)["limitBytes"])

	r = do(t, "PUT", "/api/v1/external-user", h, map[string]any{"status": "active", "limitBytes": 0})
	require.Equal(t, "active", eu(r.Body)["status"])
	require.EqualValues(t, 0, eu(r.Body)["percentUsed"], "0 when limitBytes is 0")
}

func TestPutValidationNamesEveryProblem(t *testing.T) {
	a := newTenant(t)
	h := a.keys("v1")
	meta21 := map[string]any{}
	for i := 0; i < 21; i++ {
		meta21[fmt.Sprint("k", i)] = i
	}
	cases := []struct {
		name  string
		body  any
		issue []string
	}{
		{"negative limit", map[string]any{"limitBytes": -1}, []string{"limitBytes"}},
		{"string limit", map[string]any{"limitBytes": "10"}, []string{"limitBytes"}},
		{"fraction maxSplats", map[string]any{"maxSplats": 2.5}, []string{"maxSplats"}},
		{"huge limit", `{"limitBytes": 99999999999999999999}`, []string{"limitBytes"}},
		{"bad status", map[string]any{"status": "deleted"}, []string{"status"}},
		{"bad billing", map[string]any{"billingState": "frozen"}, []string{"billingState"}},
		{"null status", map[string]any{"status": nil}, []string{"status"}},
		{"long name", map[string]any{"displayName": strings.Repeat("n", 121)}, []string{"displayName"}},
		{"empty name", map[string]any{"displayName": ""}, []string{"displayName"}},
		{"avatar not url", map[string]any{"avatarUrl": "javascript:alert(1)"}, []string{"avatarUrl"}},
		{"avatar too long", map[string]any{"avatarUrl": "https://e.com/" + strings.Repeat("a", 2040)}, []string{"avatarUrl"}},
		{"short hash", map[string]any{"emailHash": "1234567"}, []string{"emailHash"}},
		{"metadata keys", map[string]any{"metadata": meta21}, []string{"metadata"}},
		{"metadata size", map[string]any{"metadata": map[string]any{"a": strings.Repeat("z", 4100)}}, []string{"metadata"}},
		{"metadata nested", map[string]any{"metadata": map[string]any{"a": map[string]any{}}}, []string{"metadata.a"}},
		{"metadata array", map[string]any{"metadata": []any{1}}, []string{"metadata"}},
		{"keep ids", map[string]any{"keepSplatIds": []any{"nothex", 5}}, []string{"keepSplatIds[0]", "keepSplatIds[1]"}},
		{"unknown", map[string]any{"limitbytes": 5}, []string{"limitbytes: unknown field"}},
		{"several", map[string]any{"limitBytes": -5, "status": "x", "emailHash": "1"}, []string{"limitBytes", "status", "emailHash"}},
		{"malformed", `{"limitBytes": 5,}`, []string{"body"}},
		{"not object", `[{"limitBytes": 5}]`, []string{"body"}},
		{"trailing", `{} {}`, []string{"body"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "PUT", "/api/v1/external-user", h, c.body), 400)
			for _, want := range c.issue {
				require.True(t, issuesMention(issues, want), "issues %v should mention %q", issues, want)
			}
		})
	}
	// None of the rejected bodies wrote anything.
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user", h, nil), 404)
}

func TestConcurrentFirstPutsCreateOneRecord(t *testing.T) {
	a := newTenant(t)
	const n = 40
	var wg sync.WaitGroup
	ids := make([]string, n)
	statuses := make([]int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// require must not run off the test goroutine: collect, then assert.
			r, err := testenv.Do(env.URL, "PUT", "/api/v1/external-user", a.keys("race"), map[string]any{"displayName": "racer"})
			if err == nil {
				statuses[i] = r.Status
				if r.Status == 200 {
					ids[i] = eu(r.Body)["id"].(string)
				}
			}
		}()
	}
	wg.Wait()
	for i := range statuses {
		require.Equal(t, 200, statuses[i])
		require.Equal(t, ids[0], ids[i])
	}
	var count int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM external_users WHERE integration_id = $1 AND external_user_id = 'race'", a.IntegrationID).Scan(&count))
	require.Equal(t, 1, count)
}

func TestUsageAndClamping(t *testing.T) {
	a := newTenant(t)
	h := a.keys("meter")
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user/usage", h, nil), 404)
	r := do(t, "PUT", "/api/v1/external-user", h, map[string]any{"limitBytes": 1000, "maxSplats": 3})
	require.Equal(t, 200, r.Status)

	r = do(t, "GET", "/api/v1/external-user/usage", h, nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{
		"storage": map[string]any{"usedBytes": 0.0, "limitBytes": 1000.0, "remainingBytes": 1000.0, "percentUsed": 0.0},
		"splats":  map[string]any{"used": 0.0, "limit": 3.0},
		// Nothing parked; room for the headroom plus one largest file (issue 38).
		"openUploads": map[string]any{"count": 0.0, "bytes": 0.0, "maxCount": float64(quota.MaxOpenUploads),
			"maxBytes": float64(1000 + uploadrules.MaxFileBytes)},
	}, r.Body["usage"])

	// Over-allocation can leave usedBytes above limitBytes (a lowered allocation): the figures
	// clamp rather than go negative or past 100.
	setUsed := func(n int64) {
		_, err := env.Process.DB.Pool.Exec(context.Background(),
			"UPDATE external_users SET used_bytes = $1 WHERE integration_id = $2 AND external_user_id = 'meter'", n, a.IntegrationID)
		require.NoError(t, err)
	}
	setUsed(250)
	r = do(t, "GET", "/api/v1/external-user/usage", h, nil)
	require.Equal(t, map[string]any{"usedBytes": 250.0, "limitBytes": 1000.0, "remainingBytes": 750.0, "percentUsed": 25.0},
		r.Body["usage"].(map[string]any)["storage"])
	setUsed(5000)
	r = do(t, "GET", "/api/v1/external-user", h, nil)
	u := eu(r.Body)
	require.EqualValues(t, 0, u["remainingBytes"])
	require.EqualValues(t, 100, u["percentUsed"])
}

func TestSuspendForcesInactiveAndZeroCaps(t *testing.T) {
	a := newTenant(t)
	h := a.keys("payer")
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", h, map[string]any{"limitBytes": 500, "maxSplats": 4}).Status)
	r := do(t, "PUT", "/api/v1/external-user", h, map[string]any{"billingState": "suspended", "status": "active"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	u := eu(r.Body)
	require.Equal(t, "suspended", u["billingState"])
	require.Equal(t, "inactive", u["status"], "suspended forces inactive")
	require.EqualValues(t, 0, u["limitBytes"])
	require.EqualValues(t, 0, u["maxSplats"])

	r = do(t, "PUT", "/api/v1/external-user", h, map[string]any{"billingState": "canceled", "limitBytes": 10})
	u = eu(r.Body)
	require.Equal(t, "canceled", u["billingState"])
	require.EqualValues(t, 10, u["limitBytes"], "a supplied cap is kept")
	require.EqualValues(t, 0, u["maxSplats"])

	r = do(t, "PUT", "/api/v1/external-user", h, map[string]any{"billingState": "active", "status": "active", "maxSplats": nil})
	u = eu(r.Body)
	require.Equal(t, "active", u["billingState"])
	require.Equal(t, "active", u["status"])
	require.Nil(t, u["maxSplats"])
}

func TestCustomersAreScopedToTheirIntegration(t *testing.T) {
	a, b := newTenant(t), newTenant(t)
	ra := do(t, "PUT", "/api/v1/external-user", a.keys("shared-id"), map[string]any{"displayName": "A's"})
	require.Equal(t, 200, ra.Status)
	// Another integration does not see it, even under the same customer id.
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user", b.keys("shared-id"), nil), 404)
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user/usage", b.keys("shared-id"), nil), 404)
	rb := do(t, "PUT", "/api/v1/external-user", b.keys("shared-id"), map[string]any{"displayName": "B's"})
	require.Equal(t, 200, rb.Status)
	require.NotEqual(t, eu(ra.Body)["id"], eu(rb.Body)["id"])
	require.Equal(t, "A's", eu(do(t, "GET", "/api/v1/external-user", a.keys("shared-id"), nil).Body)["displayName"])
	// An integration of the same account is still another integration.
	c := newIntegration(t, a.AccountID, nil)
	requireEnvelope(t, do(t, "GET", "/api/v1/external-user", c.keys("shared-id"), nil), 404)
}
