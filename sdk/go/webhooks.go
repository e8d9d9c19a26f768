package splathost

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Webhook is a registered webhook endpoint. Secret (whsec_…) is set only by CreateWebhook and
// RotateWebhook; verify deliveries with it (package webhook).
type Webhook struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
	Secret      string   `json:"secret,omitempty"`
	CreatedAt   string   `json:"createdAt"`
}

// WebhookInput registers an endpoint: Events nil subscribes to every type.
type WebhookInput struct {
	URL         string   `json:"url"`
	Events      []string `json:"events,omitempty"`
	Description string   `json:"description,omitempty"`
}

// WebhookDelivery is one row of an endpoint's delivery log.
type WebhookDelivery struct {
	ID             string  `json:"id"`
	Type           string  `json:"type"`
	State          string  `json:"state"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"lastStatusCode"`
	LastError      *string `json:"lastError"`
	NextAttemptAt  *string `json:"nextAttemptAt"`
	CreatedAt      string  `json:"createdAt"`
}

// WebhookDeliveries is one page of a delivery log; NextCursor is empty on the last page.
type WebhookDeliveries struct {
	Deliveries []WebhookDelivery `json:"deliveries"`
	NextCursor *string           `json:"nextCursor"`
}

// CreateWebhook registers an endpoint (POST /api/v1/webhooks; integration keys). The answer
// carries its secret, shown only here and on rotate.
func (c *Client) CreateWebhook(ctx context.Context, in WebhookInput) (*Webhook, error) {
	var out struct {
		Webhook *Webhook `json:"webhook"`
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/webhooks", auth: authKeys, body: in}, &out)
	return out.Webhook, err
}

// ListWebhooks lists the integration's endpoints (GET /api/v1/webhooks), without secrets.
func (c *Client) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var out struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/webhooks", auth: authKeys}, &out)
	return out.Webhooks, err
}

// DeleteWebhook removes an endpoint (DELETE /api/v1/webhooks/{id}).
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/api/v1/webhooks/" + url.PathEscape(id), auth: authKeys}, nil)
	return err
}

// RotateWebhook issues a new secret (POST /api/v1/webhooks/{id}/rotate); the previous one keeps
// signing for 24 h beside it.
func (c *Client) RotateWebhook(ctx context.Context, id string) (*Webhook, error) {
	var out struct {
		Webhook *Webhook `json:"webhook"`
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/webhooks/" + url.PathEscape(id) + "/rotate", auth: authKeys}, &out)
	return out.Webhook, err
}

// WebhookDeliveryLog reads one page of an endpoint's deliveries, newest first
// (GET /api/v1/webhooks/{id}/deliveries); limit 0 takes the default (20), cursor "" the first page.
func (c *Client) WebhookDeliveryLog(ctx context.Context, id string, limit int, cursor string) (*WebhookDeliveries, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out WebhookDeliveries
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/webhooks/" + url.PathEscape(id) + "/deliveries", query: q, auth: authKeys}, &out)
	return &out, err
}

// RedeliverWebhook sends a delivery again now, with the same webhook-id
// (POST /api/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver). Repeating it only sends again.
func (c *Client) RedeliverWebhook(ctx context.Context, id, deliveryID string) error {
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/webhooks/" + url.PathEscape(id) + "/deliveries/" +
		url.PathEscape(deliveryID) + "/redeliver", auth: authKeys, safe: true}, nil)
	return err
}
