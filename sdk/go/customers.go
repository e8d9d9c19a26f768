package splathost

import (
	"context"
	"net/http"
)

// PutCustomer creates or updates the customer eu of the client's integration
// (PUT /api/v1/external-user). A zero update provisions a customer with the defaults.
func (c *Client) PutCustomer(ctx context.Context, eu string, u CustomerUpdate) (*ExternalUser, error) {
	var out struct {
		ExternalUser *ExternalUser `json:"externalUser"`
	}
	_, err := c.do(ctx, call{method: http.MethodPut, path: "/api/v1/external-user", eu: eu, body: u, keyed: true}, &out)
	return out.ExternalUser, err
}

// GetCustomer returns the customer eu (GET /api/v1/external-user); a missing one is a 404
// (see [IsNotFound]).
func (c *Client) GetCustomer(ctx context.Context, eu string) (*ExternalUser, error) {
	var out struct {
		ExternalUser *ExternalUser `json:"externalUser"`
	}
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/external-user", eu: eu}, &out)
	return out.ExternalUser, err
}

// DeleteCustomer soft-deletes the customer eu and every scene they own
// (DELETE /api/v1/external-user). It is the destructive path; downgrades use PutCustomer.
func (c *Client) DeleteCustomer(ctx context.Context, eu string) (*DeleteCustomerResult, error) {
	var out DeleteCustomerResult
	if _, err := c.do(ctx, call{method: http.MethodDelete, path: "/api/v1/external-user", eu: eu, keyed: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CustomerUsage returns the customer's storage and scene count
// (GET /api/v1/external-user/usage).
func (c *Client) CustomerUsage(ctx context.Context, eu string) (*CustomerUsage, error) {
	var out struct {
		Usage *CustomerUsage `json:"usage"`
	}
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/external-user/usage", eu: eu}, &out)
	return out.Usage, err
}
