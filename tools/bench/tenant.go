package bench

import (
	"fmt"
	"net/http"

	"github.com/splathost/splathost/internal/testenv"
)

// Tenant is the account, integration and customer the throughput measures read.
type Tenant struct {
	AccountID      string
	IntegrationID  string
	PublicKey      string
	SecretKey      string
	ExternalUserID string
	// UserID is the customer's record id, which both servers must return.
	UserID string
}

// Headers are the integrator's headers for GET /api/v1/external-user; without EU when the
// tenant has no ExternalUserID.
func (t Tenant) Headers() map[string]string {
	h := map[string]string{
		"Authorization":        "Bearer " + t.SecretKey,
		"X-Service-Public-Key": t.PublicKey,
	}
	if t.ExternalUserID != "" {
		h[externalUserHeader] = t.ExternalUserID
	}
	return h
}

// SetupTenant creates an account and an integration through the operator API and provisions one
// customer with a PUT, the way an integrator would.
func SetupTenant(gatewayURL, adminToken, label string) (Tenant, error) {
	admin := map[string]string{"Authorization": "Bearer " + adminToken}
	var t Tenant
	resp, err := testenv.Do(gatewayURL, http.MethodPost, "/admin/v1/accounts", admin, map[string]any{
		"name": "bench " + label, "plan": "pro", "storageBundleBytes": int64(10) << 30,
	})
	if t.AccountID, err = field(resp, err, http.StatusCreated, "create account", "account", "id"); err != nil {
		return Tenant{}, err
	}
	resp, err = testenv.Do(gatewayURL, http.MethodPost, "/admin/v1/integrations", admin, map[string]any{
		"accountId": t.AccountID, "productSlug": "bench-" + label, "capabilities": []string{"viewer", "editor"},
	})
	if t.IntegrationID, err = field(resp, err, http.StatusCreated, "create integration", "integration", "id"); err != nil {
		return Tenant{}, err
	}
	if t.PublicKey, err = field(resp, nil, http.StatusCreated, "create integration", "integration", "publicKey"); err != nil {
		return Tenant{}, err
	}
	if t.SecretKey, err = field(resp, nil, http.StatusCreated, "create integration", "integration", "secretKey"); err != nil {
		return Tenant{}, err
	}
	t.ExternalUserID = "bench-customer-" + label
	// A realistic record: every nullable column the query returns holds a value.
	resp, err = testenv.Do(gatewayURL, http.MethodPut, "/api/v1/external-user", t.Headers(), map[string]any{
		"displayName": "Bench Customer", "avatarUrl": "https://example.com/avatar.png",
		"emailHash": "0123456789abcdef", "maxSplats": 100, "limitBytes": int64(1) << 30,
		"metadata": map[string]any{"tier": "gold", "seats": 3, "beta": true},
	})
	if t.UserID, err = field(resp, err, http.StatusOK, "put customer", "externalUser", "id"); err != nil {
		return Tenant{}, err
	}
	return t, nil
}

// CheckRead sends one GET to base+path and checks it answers 200 with the tenant's customer,
// so the load runs count successes of the real read, not of some cheaper error path.
func (t Tenant) CheckRead(name, base, path string, extra map[string]string) error {
	return t.checkID(name, base, path, extra, "externalUser", t.UserID)
}

// checkID sends one GET to base+path with the tenant's headers and extra, and checks it answers
// 200 with want as obj.id.
func (t Tenant) checkID(name, base, path string, extra map[string]string, obj, want string) error {
	h := t.Headers()
	for k, v := range extra {
		h[k] = v
	}
	resp, err := testenv.Do(base, http.MethodGet, path, h, nil)
	id, err := field(resp, err, http.StatusOK, name, obj, "id")
	if err != nil {
		return err
	}
	if id != want {
		return fmt.Errorf("%s: returned %s %q, want %q", name, obj, id, want)
	}
	return nil
}

// field checks a response's status and returns the string at obj.key of its body.
func field(resp *testenv.Response, err error, status int, what, obj, key string) (string, error) {
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if resp.Status != status {
		return "", fmt.Errorf("%s: status %d, want %d: %s", what, resp.Status, status, clip(resp.Raw))
	}
	m, _ := resp.Body[obj].(map[string]any)
	v, _ := m[key].(string)
	if v == "" {
		return "", fmt.Errorf("%s: response has no %s.%s", what, obj, key)
	}
	return v, nil
}
