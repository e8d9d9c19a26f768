package gateway

import (
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/valyala/fasthttp"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
)

// corsPublic is the CORS policy of a service's public prefixes (the asset route): any origin
// may read, since an embed or a host page on another origin loads scene files; Range and the
// validators must be visible to the fetch that streams a file.
var corsPublic = cors.New(cors.Config{
	AllowOrigins:  "*",
	AllowMethods:  "GET,HEAD,OPTIONS",
	AllowHeaders:  "Range,If-None-Match,If-Modified-Since,If-Range",
	ExposeHeaders: "Content-Length,Content-Range,Accept-Ranges,ETag,Last-Modified," + exposedLimitHeaders,
	MaxAge:        3600,
})

// streamIdle is how long a streamed answer may make no progress, on either side, before the
// gateway gives up on it.
const streamIdle = 30 * time.Second

// streamBuffered is the largest answer body the streamer reads whole before passing it on.
const streamBuffered = 64 << 10

// streamer forwards the public prefixes of a service in another process (scene files of up to
// gigabytes): with no caller, only GET and HEAD, and the answer's body streamed through
// instead of read whole into memory like the API forwarder does.
type streamer struct {
	client *replicaPool
}

func newStreamer(base string) (*streamer, error) {
	pool, err := newReplicaPool(base, func(addr string) *fasthttp.HostClient {
		return &fasthttp.HostClient{
			Addr:                          addr,
			MaxConns:                      1024,
			MaxIdleConnDuration:           90 * time.Second,
			DisableHeaderNamesNormalizing: true,
			// The path goes on as the client wrote it and canonicalPaths checked it: a normalised
			// one turned /assets/%2e%2e/metrics into the service's /metrics.
			DisablePathNormalizing: true,
			StreamResponseBody:     true,
			// fasthttp streams only a body longer than this (and a chunked one); anything up to it
			// is read whole, which bounds what one answer holds here.
			MaxResponseBodySize: streamBuffered,
			// No whole-answer read deadline: a 2 GiB file takes longer than any fixed bound. The
			// upstream bounds its own idleness (assetIdle), which ends a stalled stream here too.
			ReadTimeout:  0,
			WriteTimeout: 60 * time.Second,
		}
	})
	if err != nil {
		return nil, err
	}
	return &streamer{client: pool}, nil
}

// streamHeaders are the request headers a public answer depends on; nothing else (no cookie,
// no credential) is forwarded.
var streamHeaders = []string{fiber.HeaderRange, fiber.HeaderIfRange, fiber.HeaderIfNoneMatch, fiber.HeaderIfModifiedSince,
	httpx.RequestIDHeader, "Traceparent", "Tracestate"}

// handle forwards a public GET or HEAD and streams the service's answer back.
func (s *streamer) handle(c *fiber.Ctx) error {
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		return apperr.New(fiber.StatusMethodNotAllowed, "method not allowed")
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	streamRequest(c, req)
	resp := fasthttp.AcquireResponse()
	if c.Method() == fiber.MethodHead {
		resp.SkipBody = true
	}
	if err := s.client.Do("", req, resp); err != nil {
		fasthttp.ReleaseResponse(resp)
		return unavailable(err)
	}
	c.Status(resp.StatusCode())
	copyAnswerHeaders(c, resp)
	streamAnswer(c, resp)
	return nil
}

// streamRequest is the public request as the service gets it: the method, the path as the
// client sent it, and only the headers the answer depends on (streamHeaders).
func streamRequest(c *fiber.Ctx, req *fasthttp.Request) {
	req.Header.SetMethod(c.Method())
	req.SetRequestURIBytes(rawRequestURI(c))
	for _, h := range streamHeaders {
		if v := c.Request().Header.Peek(h); len(v) > 0 {
			req.Header.SetBytesV(h, v)
		}
	}
	httpx.InjectTrace(c, req.Header.Set)
}

// streamAnswer passes the body of resp on and releases resp: a HEAD's length alone, a body
// fasthttp read whole as a copy, and a streamed body as a stream that releases resp when the
// server has written it.
func streamAnswer(c *fiber.Ctx, resp *fasthttp.Response) {
	length := resp.Header.ContentLength()
	switch {
	case c.Method() == fiber.MethodHead:
		c.Response().SkipBody = true
		if length >= 0 {
			c.Response().Header.SetContentLength(length)
		}
	case resp.BodyStream() == nil:
		c.Response().SetBodyRaw(append([]byte(nil), resp.Body()...))
	default:
		// The response (and its upstream connection) is released when the server has written
		// the body, or given up writing it: it closes the stream either way.
		c.Response().SetBodyStream(&upstreamBody{resp: resp, conn: c.Context().Conn()}, length)
		return
	}
	fasthttp.ReleaseResponse(resp)
}

// upstreamBody is an upstream answer's body stream. Every read pushes the client connection's
// write deadline forward (an idle bound instead of the server's whole-answer WriteTimeout);
// Close returns the upstream connection to its pool.
type upstreamBody struct {
	resp *fasthttp.Response
	conn net.Conn
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	if b.conn != nil {
		_ = b.conn.SetWriteDeadline(time.Now().Add(streamIdle))
	}
	return b.resp.BodyStream().Read(p)
}

func (b *upstreamBody) Close() error {
	err := b.resp.CloseBodyStream()
	fasthttp.ReleaseResponse(b.resp)
	return err
}

// rawRequestURI is the request's path as the client sent it, with its query string: what
// canonicalPaths checked (URI().RequestURI() would be the normalised path).
func rawRequestURI(c *fiber.Ctx) []byte {
	uri := c.Request().URI()
	out := append([]byte(nil), uri.PathOriginal()...)
	if q := uri.QueryString(); len(q) > 0 {
		out = append(append(out, '?'), q...)
	}
	return out
}
