package splathost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Header names of the interface (spec, Authentication).
const (
	headerPublicKey    = "X-Service-Public-Key"
	headerExternalUser = "X-Service-External-User-Id"
)

// Client calls one splathost deployment. Create it with [New]; it is safe for concurrent use.
type Client struct {
	base       string
	http       *http.Client
	publicKey  string
	secretKey  string
	adminToken string
	retry      RetryPolicy
	userAgent  string
	// jitter picks the wait before a retry in [0, ceiling]; tests replace it.
	jitter func(ceiling time.Duration) time.Duration
}

// Option configures a [Client].
type Option func(*Client)

// WithKeys sets the integration's public (mpk_) and secret (msk_) keys, which every /api call
// sends. The secret must stay on the integrator's server.
func WithKeys(publicKey, secretKey string) Option {
	return func(c *Client) { c.publicKey, c.secretKey = publicKey, secretKey }
}

// WithAdminToken sets the operator's admin token, which the /admin calls send.
func WithAdminToken(token string) Option {
	return func(c *Client) { c.adminToken = token }
}

// WithHTTPClient replaces the HTTP client (its timeout, transport, proxy). The default is a
// client without an overall timeout, since uploads may take long: bound calls with contexts.
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) { c.http = h }
}

// WithRetry replaces [DefaultRetryPolicy]. A policy with MaxAttempts 1 disables retries.
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) { c.retry = p }
}

// WithUserAgent sets the User-Agent of every request, so the operator can tell clients apart.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// New returns a client of the deployment at baseURL (for example "https://api.example.com").
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("splathost: base URL %q must be an absolute http(s) URL", baseURL)
	}
	c := &Client{base: strings.TrimSuffix(baseURL, "/"), http: &http.Client{}, retry: DefaultRetryPolicy,
		userAgent: "splathost-go", jitter: fullJitter}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// authKind is which credential a request carries.
type authKind int

const (
	authKeys   authKind = iota // secret + public key (/api/v1)
	authSecret                 // secret bearer alone (embed-session mint)
	authAdmin                  // admin token (/admin/v1)
)

// call is one API request.
type call struct {
	method string
	path   string
	query  url.Values
	auth   authKind
	// eu is the X-Service-External-User-Id; empty sends none.
	eu     string
	body   any
	header http.Header
	// safe marks a POST whose repetition has no second effect, so it is retried like the
	// idempotent methods.
	safe bool
	// keyed marks a route that honours Idempotency-Key: the call sends one key on every attempt,
	// so it is retried, and a 409 IDEMPOTENCY_KEY_IN_USE (the first attempt still runs) is
	// waited out like a 5xx.
	keyed bool
}

// idempotent is the retry rule of most calls: methods that are repeatable by definition.
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// do sends c, retrying as its retry flag allows, decodes a 2xx body into out (when not nil)
// and returns the status; any other status is an *APIError.
func (cl *Client) do(ctx context.Context, c call, out any) (int, error) {
	var payload []byte
	if c.body != nil {
		var err error
		if payload, err = json.Marshal(c.body); err != nil {
			return 0, fmt.Errorf("splathost: encode request: %w", err)
		}
	}
	target := cl.base + c.path
	if len(c.query) > 0 {
		target += "?" + c.query.Encode()
	}
	if c.keyed {
		h := c.header.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Set(headerIdempotencyKey, idempotencyKey(ctx))
		c.header = h
	}
	var status int
	var body []byte
	var header http.Header
	// A rate limit's refusal did nothing, so any method may be sent again after it.
	retryable := idempotent(c.method) || c.safe || c.keyed
	err := cl.retry.run(ctx, true, cl.jitter, func() (bool, time.Duration, error) {
		var reader io.Reader
		if payload != nil {
			reader = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, c.method, target, reader)
		if err != nil {
			return false, 0, err
		}
		cl.authorize(req, c)
		resp, err := cl.http.Do(req)
		if err != nil {
			return retryable, 0, err
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		if err != nil {
			return retryable, 0, err
		}
		status, header = resp.StatusCode, resp.Header
		if status == http.StatusTooManyRequests {
			if e := decodeAPIError(status, header, body); e.Code == CodeRateLimited {
				return true, retryAfter(resp.Header), e
			}
		}
		if status >= 500 {
			return retryable, retryAfter(resp.Header), decodeAPIError(status, header, body)
		}
		if c.keyed && status == http.StatusConflict {
			if e := decodeAPIError(status, header, body); e.Code == CodeIdempotencyKeyInUse {
				return retryable, retryAfter(resp.Header), e
			}
		}
		return false, 0, nil
	})
	if err != nil {
		return status, err
	}
	if status < 200 || status > 299 {
		return status, decodeAPIError(status, header, body)
	}
	if out != nil && len(body) > 0 {
		if err := json.Unmarshal(body, out); err != nil {
			return status, fmt.Errorf("splathost: decode %s %s answer: %w", c.method, c.path, err)
		}
	}
	return status, nil
}

func (cl *Client) authorize(req *http.Request, c call) {
	req.Header.Set("Accept", "application/json")
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cl.userAgent != "" {
		req.Header.Set("User-Agent", cl.userAgent)
	}
	switch c.auth {
	case authAdmin:
		req.Header.Set("Authorization", "Bearer "+cl.adminToken)
	case authSecret:
		req.Header.Set("Authorization", "Bearer "+cl.secretKey)
	default:
		req.Header.Set("Authorization", "Bearer "+cl.secretKey)
		req.Header.Set(headerPublicKey, cl.publicKey)
	}
	if c.eu != "" {
		req.Header.Set(headerExternalUser, c.eu)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
}

// asAPIError is errors.As for *APIError.
func asAPIError(err error) (*APIError, bool) {
	var e *APIError
	ok := errors.As(err, &e)
	return e, ok
}

// pathEscape escapes one path segment (ids are hex, but a caller's typo must not change the
// route). An external user id of "." or ".." is escaped whole (%2E): written as it is, it is a
// dot segment, which the gateway refuses as a non-canonical path.
func pathEscape(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}
