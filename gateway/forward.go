package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
)

var errListenerDown = errors.New("integration cache listener is down")

// forwarder sends a request to a service in another process over a keep-alive connection
// pool, with the caller the gateway authenticated signed into httpx.CallerHeader.
type forwarder struct {
	client *fasthttp.HostClient
	secret []byte
}

func newForwarder(base string, secret []byte) (*forwarder, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("upstream url %q: want http://host:port", base)
	}
	if len(secret) == 0 {
		return nil, errors.New("forwarding needs the internal secret")
	}
	return &forwarder{secret: secret, client: &fasthttp.HostClient{
		Addr:                          u.Host,
		MaxConns:                      1024,
		MaxIdleConnDuration:           90 * time.Second,
		ReadTimeout:                   60 * time.Second,
		WriteTimeout:                  60 * time.Second,
		DisableHeaderNamesNormalizing: true,
		MaxResponseBodySize:           64 << 20,
	}}, nil
}

// hopHeaders are connection-scoped and never forwarded.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te", "Trailer"}

func (f *forwarder) handle(c *fiber.Ctx) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)

	c.Request().CopyTo(req)
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.Header.SetHost(f.client.Addr)
	req.Header.Del(httpx.CallerHeader)
	if caller := httpx.CallerOf(c); caller != nil {
		sig, err := httpx.SignCaller(f.secret, caller, time.Now())
		if err != nil {
			return apperr.Internal(err)
		}
		req.Header.Set(httpx.CallerHeader, sig)
	}
	httpx.InjectTrace(c, req.Header.Set)
	if err := f.client.Do(req, resp); err != nil {
		e := apperr.New(fiber.StatusBadGateway, "service unavailable, retry with backoff")
		e.Cause = err
		return e
	}
	c.Status(resp.StatusCode())
	resp.Header.VisitAll(func(k, v []byte) {
		key := string(k)
		for _, h := range hopHeaders {
			if key == h {
				return
			}
		}
		if key == fiber.HeaderContentLength {
			return
		}
		c.Response().Header.SetBytesKV(k, v)
	})
	c.Response().SetBodyRaw(append([]byte(nil), resp.Body()...))
	return nil
}

// upstreamReady checks a service's own readiness endpoint.
func upstreamReady(base string) httpx.Check {
	return func(ctx context.Context) error {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(2 * time.Second)
		}
		status, _, err := fasthttp.GetDeadline(nil, base+"/readyz", deadline)
		if err != nil {
			return err
		}
		if status != fiber.StatusOK {
			return fmt.Errorf("%s/readyz answered %d", base, status)
		}
		return nil
	}
}
