package gateway

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/netx"
)

var errListenerDown = errors.New("integration cache listener is down")

// Upstream retry policy. A service that restarts (a deploy, a crash under an orchestrator, the
// dev stack's supervisor) refuses connections for a moment and leaves the gateway's pooled
// keep-alive connections dead; a request that never reached it is retried until the service is
// back, within a bound, rather than answered 502.
const (
	// upstreamRetryFor bounds the time a request spends retrying: long enough for a service
	// process to restart, short enough that a client's own retry takes over when it does not.
	upstreamRetryFor = 5 * time.Second
	// upstreamBackoffMin and upstreamBackoffMax are the first and the longest pause between
	// attempts.
	upstreamBackoffMin = 20 * time.Millisecond
	upstreamBackoffMax = 500 * time.Millisecond
	// upstreamIdleFor closes pooled connections unused this long: a connection idle for a while
	// is the likeliest to have been closed by a restarted service.
	upstreamIdleFor = 10 * time.Second
)

// forwarder sends a request to a service in another process over a keep-alive connection
// pool, with the caller the gateway authenticated signed into httpx.CallerHeader.
type forwarder struct {
	name     string
	client   *replicaPool // the service's replicas, each with its keep-alive pool (replicas.go)
	signer   *httpx.CallerSigner
	log      *slog.Logger
	retryFor time.Duration
	// droppedAt (unix ns) is when the idle connections were last dropped after a connection
	// failure, so a burst of failures drops them once, not once per request.
	droppedAt atomic.Int64
}

func newForwarder(name, base string, secret []byte, log *slog.Logger) (*forwarder, error) {
	if len(secret) == 0 {
		return nil, errors.New("forwarding needs the internal secret")
	}
	if log == nil {
		log = slog.Default()
	}
	pool, err := newReplicaPool(base, func(addr string) *fasthttp.HostClient {
		return &fasthttp.HostClient{
			Addr:                          addr,
			MaxConns:                      1024,
			MaxIdleConnDuration:           upstreamIdleFor,
			ReadTimeout:                   httpx.UpstreamTimeout,
			WriteTimeout:                  httpx.UpstreamTimeout,
			DisableHeaderNamesNormalizing: true,
			// The path goes on as the client wrote it: normalizing would decode %2F in a path
			// segment (a customer id with a slash) into a separator, another route.
			DisablePathNormalizing: true,
			MaxResponseBodySize:    64 << 20,
			// One attempt per Do: handle decides what may be retried (fasthttp would also resend a
			// POST after an EOF, which a service that died while handling it may have applied).
			MaxIdemponentCallAttempts: 1,
			Dial:                      dialLive,
		}
	})
	if err != nil {
		return nil, err
	}
	return &forwarder{name: name, signer: httpx.NewCallerSigner(secret), log: log, retryFor: upstreamRetryFor, client: pool}, nil
}

// dialLive dials like fasthttp's default and wraps the connection in a liveConn.
func dialLive(addr string) (net.Conn, error) {
	c, err := fasthttp.Dial(addr)
	if err != nil {
		return nil, err
	}
	return &liveConn{Conn: c}, nil
}

// errPeerClosed is the write error of a pooled connection the upstream has already closed.
var errPeerClosed = errors.New("upstream closed the pooled connection")

// liveConn refuses to write a request on a pooled connection the upstream has already closed (a
// restarted service closes its idle keep-alive connections, or the kernel does for a killed
// one). fasthttp cannot tell such a connection from a live one until it reads the answer, and an
// EOF then no longer shows whether the request was received, so a POST could not be resent; a
// failed write shows it was not. The check (netx.IdleBroken) runs before each write after the
// first.
type liveConn struct {
	net.Conn
	used bool
}

// Write writes p unless the upstream has closed the connection, in which case it fails as a
// write (see failureOf).
func (c *liveConn) Write(p []byte) (int, error) {
	if c.used && netx.IdleBroken(c.Conn) {
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errPeerClosed}
	}
	c.used = true
	return c.Conn.Write(p)
}

// upgradeHopHeaders are the connection-scoped headers an upgrade keeps (the tunnel forwards
// them to ask the service for the same upgrade); the other hop headers are never forwarded.
var (
	upgradeHopHeaders = []string{"Connection", "Upgrade"}
	otherHopHeaders   = []string{"Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Te", "Trailer"}
)

// hopHeaders are connection-scoped and never forwarded by a plain request.
var hopHeaders = slices.Concat(upgradeHopHeaders, otherHopHeaders)

// handle forwards the request to the service and passes its answer on.
func (f *forwarder) handle(c *fiber.Ctx) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	if err := f.request(c, req); err != nil {
		return err
	}
	attempts, err := f.do(affinityKey(c), req, resp)
	if err != nil {
		return f.failed(c, req, attempts, err)
	}
	if attempts > 1 {
		f.log.InfoContext(c.UserContext(), "upstream answered after retries", "upstream", f.name, "addr", f.client.String(),
			"method", c.Method(), "route", c.Route().Path, "attempts", attempts, "requestId", httpx.RequestID(c))
	}
	c.Status(resp.StatusCode())
	copyAnswerHeaders(c, resp)
	// Copied into the response's own pooled buffer: resp goes back to its pool on return.
	c.Response().SetBody(resp.Body())
	return nil
}

// request is the client's request as the service gets it: without hop-by-hop headers, with
// the caller the gateway authenticated signed into httpx.CallerHeader (a client's own is
// dropped) and the trace.
func (f *forwarder) request(c *fiber.Ctx, req *fasthttp.Request) error {
	c.Request().CopyTo(req)
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.Header.Del(httpx.CallerHeader)
	if caller := httpx.CallerOf(c); caller != nil {
		sig, err := f.signer.Sign(caller, time.Now())
		if err != nil {
			return apperr.Internal(err)
		}
		req.Header.Set(httpx.CallerHeader, sig)
	}
	httpx.InjectTrace(c, req.Header.Set)
	return nil
}

// failed logs a request the service did not answer after attempts and says so to the client.
func (f *forwarder) failed(c *fiber.Ctx, req *fasthttp.Request, attempts int, err error) error {
	// The route is the pattern (no ids, no query string); no header is logged.
	f.log.WarnContext(c.UserContext(), "upstream request failed", "upstream", f.name, "addr", f.client.String(),
		"method", c.Method(), "route", c.Route().Path, "attempts", attempts, "requestId", httpx.RequestID(c), "error", err)
	cause := fmt.Errorf("upstream %s (%s) after %d attempts: %w", f.name, f.client, attempts, err)
	if failureOf(err) != notReceived && !idempotent(req) {
		// The service may have received the request and acted on it before it failed: the
		// honest answer is that the outcome is unknown (the idempotency middleware turns it
		// into the outcome for a keyed request).
		return apperr.OutcomeUnknown(cause)
	}
	return unavailable(cause)
}

// unavailable is the answer when no replica of a service answered: 502, retry later.
func unavailable(cause error) error {
	e := apperr.New(fiber.StatusBadGateway, "service unavailable, retry with backoff")
	e.Cause = cause
	return e
}

// do sends req to the replica of the affinity key (replicas.go), retrying while the failure
// shows the upstream did not get it (connection refused, the request's write failed) and, for
// idempotent methods, when the connection broke before an answer (a pooled connection the
// upstream closed, or an upstream killed mid-request): with backoff, for at most retryFor. It
// returns the number of attempts made.
func (f *forwarder) do(key string, req *fasthttp.Request, resp *fasthttp.Response) (int, error) {
	deadline := time.Now().Add(f.retryFor)
	backoff := upstreamBackoffMin
	for attempt := 1; ; attempt++ {
		err := f.client.Do(key, req, resp)
		if err == nil {
			return attempt, nil
		}
		switch failureOf(err) {
		case notReceived:
		case connectionLost:
			if !idempotent(req) {
				return attempt, err
			}
		default:
			return attempt, err
		}
		// The other pooled connections to this upstream are likely dead too (it restarted):
		// close them rather than let each cost a request an attempt.
		f.dropIdle()
		wait := backoff
		if attempt == 1 && failureOf(err) == connectionLost {
			wait = 0 // a stale pooled connection: a new one is likely to work at once
		} else {
			backoff = min(2*backoff, upstreamBackoffMax)
		}
		if time.Now().Add(wait).After(deadline) {
			return attempt, err
		}
		time.Sleep(wait)
	}
}

// dropIdle closes the idle connections to the upstream, at most once per backoff ceiling.
func (f *forwarder) dropIdle() {
	now := time.Now().UnixNano()
	last := f.droppedAt.Load()
	if now-last < int64(upstreamBackoffMax) || !f.droppedAt.CompareAndSwap(last, now) {
		return
	}
	f.client.CloseIdleConnections()
}

// upstreamFailure classifies a transport error of one attempt.
type upstreamFailure int

const (
	// otherFailure: a timeout, an oversized answer, a malformed answer: not retried.
	otherFailure upstreamFailure = iota
	// notReceived: the upstream cannot have received the request; any method may be resent.
	notReceived
	// connectionLost: the connection broke before a complete answer; the upstream may have
	// received the request, so only idempotent methods are resent.
	connectionLost
)

// failureOf classifies err.
func failureOf(err error) upstreamFailure {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrBodyTooLarge) {
		return otherFailure
	}
	if errors.Is(err, fasthttp.ErrDialTimeout) || errors.Is(err, syscall.ECONNREFUSED) {
		return notReceived
	}
	var op *net.OpError
	if errors.As(err, &op) {
		switch {
		case op.Timeout():
			return otherFailure
		case op.Op == "dial", op.Op == "write":
			// A write fails when the upstream had already closed or reset the connection: it
			// will not process the part it may have read.
			return notReceived
		}
		return connectionLost
	}
	if errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return connectionLost
	}
	return otherFailure
}

// idempotent methods may be sent twice with the effect of once (RFC 9110 9.2.2); DELETE is left
// out because a repeated DELETE answers 404 where the first answered 204.
func idempotent(req *fasthttp.Request) bool {
	h := &req.Header
	return h.IsGet() || h.IsHead() || h.IsOptions() || h.IsPut()
}

// copyAnswerHeaders copies a service's answer headers to the client's response, leaving out
// the connection-scoped ones and Content-Length, which the response sets for the body it sends.
func copyAnswerHeaders(c *fiber.Ctx, resp *fasthttp.Response) {
	resp.Header.VisitAll(func(k, v []byte) {
		// string(k) in a comparison does not allocate; a named copy would, per header.
		for _, h := range hopHeaders {
			if string(k) == h {
				return
			}
		}
		if string(k) == fiber.HeaderContentLength {
			return
		}
		c.Response().Header.SetBytesKV(k, v)
	})
}
