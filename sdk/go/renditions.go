package splathost

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Rendition is one scene's rendition as the operator API lists it.
type Rendition struct {
	SplatID        string  `json:"splatId"`
	IntegrationID  string  `json:"integrationId"`
	ExternalUserID string  `json:"externalUserId"`
	State          string  `json:"state"`
	Message        *string `json:"message"`
	RenditionType  *string `json:"renditionType"`
	RenditionBytes *int64  `json:"renditionBytes"`
	Gaussians      *int64  `json:"gaussians"`
	FileSizeBytes  int64   `json:"fileSizeBytes"`
	// WorkflowID is the rendition's workflow in the Temporal UI.
	WorkflowID string `json:"workflowId"`
	CreatedAt  string `json:"createdAt"`
}

// RenditionFilter selects ListRenditions' scenes: State (default failed), IntegrationID (default
// all) and Limit (1-200, default 50).
type RenditionFilter struct {
	State         string
	IntegrationID string
	Limit         int
}

// ListRenditions lists the newest scenes whose rendition is in a state
// (GET /admin/v1/renditions; admin token).
func (c *Client) ListRenditions(ctx context.Context, f RenditionFilter) ([]Rendition, error) {
	q := url.Values{}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if f.IntegrationID != "" {
		q.Set("integrationId", f.IntegrationID)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out struct {
		Renditions []Rendition `json:"renditions"`
	}
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/admin/v1/renditions", query: q, auth: authAdmin}, &out)
	return out.Renditions, err
}

// RetryRendition builds a scene's rendition again (POST /admin/v1/renditions/{splatId}/retry;
// admin token): the scene is pending again at once, and ready or failed when the new run ends.
// Retrying is safe: a rendition already running is not started twice.
func (c *Client) RetryRendition(ctx context.Context, splatID string) (*Rendition, error) {
	var out struct {
		Rendition *Rendition `json:"rendition"`
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/admin/v1/renditions/" + pathEscape(splatID) + "/retry",
		auth: authAdmin, safe: true}, &out)
	return out.Rendition, err
}
