package splathost

import (
	"context"
	"net/http"
)

// The operator API (contract item 2). These calls send the admin token of [WithAdminToken].

// Plan is an account's plan. Cloning needs pro or enterprise; overage needs enterprise.
type Plan string

// Plans.
const (
	PlanFree       Plan = "free"
	PlanPro        Plan = "pro"
	PlanEnterprise Plan = "enterprise"
)

// Account is an integrator's billing account.
type Account struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Plan               Plan   `json:"plan"`
	StorageBundleBytes int64  `json:"storageBundleBytes"`
	// MaxSplats nil means no account-wide scene cap.
	MaxSplats  *int64 `json:"maxSplats"`
	Overage    bool   `json:"overage"`
	UsedBytes  int64  `json:"usedBytes"`
	SplatCount int64  `json:"splatCount"`
	CreatedAt  string `json:"createdAt"`
	UpdatedAt  string `json:"updatedAt"`
}

// NewAccount is the body of CreateAccount. MaxSplats nil means no cap.
type NewAccount struct {
	Name               string `json:"name"`
	Plan               Plan   `json:"plan"`
	StorageBundleBytes int64  `json:"storageBundleBytes"`
	MaxSplats          *int64 `json:"maxSplats"`
	Overage            bool   `json:"overage"`
}

// AccountUpdate is the body of UpdateAccount; omitted fields keep their value, and MaxSplats
// set to Null removes the cap.
type AccountUpdate struct {
	Name               *string         `json:"name,omitempty"`
	Plan               *Plan           `json:"plan,omitempty"`
	StorageBundleBytes *int64          `json:"storageBundleBytes,omitempty"`
	MaxSplats          Nullable[int64] `json:"maxSplats,omitzero"`
	Overage            *bool           `json:"overage,omitempty"`
}

// Integration is an integrator's key pair with its capabilities. SecretKey is set only in the
// answers of CreateIntegration and RotateIntegration: the service keeps only its hash.
type Integration struct {
	ID             string   `json:"id"`
	AccountID      string   `json:"accountId"`
	ProductSlug    string   `json:"productSlug"`
	Capabilities   []string `json:"capabilities"`
	RestAccess     bool     `json:"restAccess"`
	PublicKey      string   `json:"publicKey"`
	SecretKey      string   `json:"secretKey,omitempty"`
	FrameAncestors []string `json:"frameAncestors"`
	Revoked        bool     `json:"revoked"`
	RevokedAt      *string  `json:"revokedAt"`
	CreatedAt      string   `json:"createdAt"`
	UpdatedAt      string   `json:"updatedAt"`
}

// NewIntegration is the body of CreateIntegration. RestAccess nil means true.
type NewIntegration struct {
	AccountID   string `json:"accountId"`
	ProductSlug string `json:"productSlug"`
	// Capabilities holds "viewer" and/or "editor".
	Capabilities []string `json:"capabilities"`
	RestAccess   *bool    `json:"restAccess,omitempty"`
	// FrameAncestors restricts which origins may frame the embeds (CSP source expressions).
	FrameAncestors []string `json:"frameAncestors,omitempty"`
}

// IntegrationUpdate is the body of UpdateIntegration; nil fields keep their value, and
// FrameAncestors pointing to an empty list lifts the framing restriction.
type IntegrationUpdate struct {
	ProductSlug    *string   `json:"productSlug,omitempty"`
	Capabilities   []string  `json:"capabilities,omitempty"`
	RestAccess     *bool     `json:"restAccess,omitempty"`
	FrameAncestors *[]string `json:"frameAncestors,omitempty"`
}

// account makes an operator call answered with {account}.
func (c *Client) account(ctx context.Context, cl call) (*Account, error) {
	var out struct {
		Account *Account `json:"account"`
	}
	cl.auth = authAdmin
	_, err := c.do(ctx, cl, &out)
	return out.Account, err
}

// integration makes an operator call answered with {integration}.
func (c *Client) integration(ctx context.Context, cl call) (*Integration, error) {
	var out struct {
		Integration *Integration `json:"integration"`
	}
	cl.auth = authAdmin
	_, err := c.do(ctx, cl, &out)
	return out.Integration, err
}

// CreateAccount creates an account (POST /admin/v1/accounts). Not retried: a lost answer
// would leave a second account behind a retry.
func (c *Client) CreateAccount(ctx context.Context, a NewAccount) (*Account, error) {
	return c.account(ctx, call{method: http.MethodPost, path: "/admin/v1/accounts", body: a})
}

// GetAccount returns an account (GET /admin/v1/accounts/{id}).
func (c *Client) GetAccount(ctx context.Context, id string) (*Account, error) {
	return c.account(ctx, call{method: http.MethodGet, path: "/admin/v1/accounts/" + pathEscape(id)})
}

// UpdateAccount changes an account (PATCH /admin/v1/accounts/{id}).
func (c *Client) UpdateAccount(ctx context.Context, id string, u AccountUpdate) (*Account, error) {
	return c.account(ctx, call{method: http.MethodPatch, path: "/admin/v1/accounts/" + pathEscape(id), body: u})
}

// CreateIntegration creates an integration and its key pair (POST /admin/v1/integrations).
// The answer is the only time the secret is shown; it is not retried for that reason.
func (c *Client) CreateIntegration(ctx context.Context, in NewIntegration) (*Integration, error) {
	return c.integration(ctx, call{method: http.MethodPost, path: "/admin/v1/integrations", body: in})
}

// GetIntegration returns an integration without its secret (GET /admin/v1/integrations/{id}).
func (c *Client) GetIntegration(ctx context.Context, id string) (*Integration, error) {
	return c.integration(ctx, call{method: http.MethodGet, path: "/admin/v1/integrations/" + pathEscape(id)})
}

// UpdateIntegration changes an integration (PATCH /admin/v1/integrations/{id}).
func (c *Client) UpdateIntegration(ctx context.Context, id string, u IntegrationUpdate) (*Integration, error) {
	return c.integration(ctx, call{method: http.MethodPatch, path: "/admin/v1/integrations/" + pathEscape(id), body: u})
}

// RotateIntegration issues a new secret key and returns it; the old one stops working
// (POST /admin/v1/integrations/{id}/rotate). Not retried: a retry would rotate again and the
// secret of the lost answer would never be seen.
func (c *Client) RotateIntegration(ctx context.Context, id string) (*Integration, error) {
	return c.integration(ctx, call{method: http.MethodPost, path: "/admin/v1/integrations/" + pathEscape(id) + "/rotate"})
}

// RevokeIntegration revokes an integration for good: every call with its keys answers 410
// (POST /admin/v1/integrations/{id}/revoke). Revoking twice is harmless, so it is retried.
func (c *Client) RevokeIntegration(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/admin/v1/integrations/" + pathEscape(id) + "/revoke", auth: authAdmin, safe: true}, nil)
	return err
}

// AdminCustomerUsage returns a customer's usage as the operator sees it, without the
// integration's secret (GET /admin/v1/integrations/{id}/customers/{externalUserId}/usage).
func (c *Client) AdminCustomerUsage(ctx context.Context, integrationID, eu string) (*CustomerUsage, error) {
	var out struct {
		Usage *CustomerUsage `json:"usage"`
	}
	_, err := c.do(ctx, call{method: http.MethodGet, auth: authAdmin,
		path: "/admin/v1/integrations/" + pathEscape(integrationID) + "/customers/" + pathEscape(eu) + "/usage"}, &out)
	return out.Usage, err
}
