package splathost

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// ListSplats returns one page of the integration's scenes (GET /api/v1/splats), newest first
// unless o says otherwise. Retained (archived) scenes never appear.
func (c *Client) ListSplats(ctx context.Context, o ListSplatsOptions) (*SplatPage, error) {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if o.Featured {
		q.Set("featured", "true")
	}
	if o.Sort != "" {
		q.Set("sort", o.Sort)
	}
	if o.Dir != "" {
		q.Set("dir", o.Dir)
	}
	var out SplatPage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/splats", query: q, eu: o.ExternalUserID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSplat returns one scene with its levelData (GET /api/v1/splats/{id}). With eu not empty
// the scene must belong to that customer or be public within the integration.
func (c *Client) GetSplat(ctx context.Context, eu, splatID string) (*Splat, error) {
	var out struct {
		Splat *Splat `json:"splat"`
	}
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/splats/" + pathEscape(splatID), eu: eu}, &out)
	return out.Splat, err
}

// PatchSplat updates a scene (PATCH /api/v1/splats/{id}). Metadata changes need the owning
// customer eu; featuring works on any scene of the integration and ignores eu.
func (c *Client) PatchSplat(ctx context.Context, eu, splatID string, p SplatPatch) (*Splat, error) {
	var out struct {
		Splat *Splat `json:"splat"`
	}
	_, err := c.do(ctx, call{method: http.MethodPatch, path: "/api/v1/splats/" + pathEscape(splatID), eu: eu, body: p}, &out)
	return out.Splat, err
}

// DeleteSplat deletes a scene of the customer eu and its stored assets
// (DELETE /api/v1/splats/{id}).
func (c *Client) DeleteSplat(ctx context.Context, eu, splatID string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/api/v1/splats/" + pathEscape(splatID), eu: eu}, nil)
	return err
}

// CommitSplat creates a scene from uploaded objects (POST /api/v1/splats). It is retried under
// one Idempotency-Key (see [WithIdempotencyKey]): a retry after a lost answer gets the first
// answer again rather than a refusal of the spent upload. [Client.UploadFile] and
// [Client.UploadFolder] call it for you.
func (c *Client) CommitSplat(ctx context.Context, eu string, r CommitRequest) (*CommitResult, error) {
	var out CommitResult
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/splats", eu: eu, body: r, keyed: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TrendingSplats ranks the integration's public embeddable scenes
// (GET /api/v1/splats/trending).
func (c *Client) TrendingSplats(ctx context.Context, o TrendingOptions) (*Trending, error) {
	q := url.Values{}
	if o.WindowDays > 0 {
		q.Set("window", strconv.Itoa(o.WindowDays))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out Trending
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/splats/trending", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SplatAnalytics returns a scene's impressions and unique viewers per UTC day of the last
// windowDays days, today included (GET /api/v1/splats/{id}/analytics; 1-90, 0 for the default
// 30). Scoped like GetSplat: eu sees its own scenes and public ones.
func (c *Client) SplatAnalytics(ctx context.Context, eu, splatID string, windowDays int) (*Analytics, error) {
	q := url.Values{}
	if windowDays > 0 {
		q.Set("window", strconv.Itoa(windowDays))
	}
	var out struct {
		Analytics *Analytics `json:"analytics"`
	}
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/splats/" + pathEscape(splatID) + "/analytics", query: q, eu: eu}, &out)
	return out.Analytics, err
}

// MintSession mints an embed session token (POST /api/editor/embed-sessions). Call it from a
// server only. A mint has no lasting effect, so it is retried like a GET.
func (c *Client) MintSession(ctx context.Context, r SessionRequest) (*Session, error) {
	if r.PublicKey == "" {
		r.PublicKey = c.publicKey
	}
	var out Session
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/editor/embed-sessions", auth: authSecret,
		eu: r.ExternalUserID, body: r, safe: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
