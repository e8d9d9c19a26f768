package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
)

// Tunnel bounds. The upstream's handshake answer is read whole before anything is passed on,
// so its size is bounded; after the 101 the bytes flow unread both ways.
const (
	// tunnelMaxHeader bounds the upstream's answer header (fasthttp refuses a larger one).
	tunnelMaxHeader = 16 << 10
	// tunnelMaxBody bounds the body of an upstream refusal that is not an upgrade.
	tunnelMaxBody = 64 << 10
	// tunnelHandshake bounds the dial, the request's write and the answer's read.
	tunnelHandshake = 10 * time.Second
)

// tunnel forwards a WebSocket upgrade (the multiplayer room) to a service in another process:
// it dials the service, sends the upgrade request with the caller the gateway authenticated
// signed into httpx.CallerHeader (and without the session token, which the service never
// needs), reads the answer and, on a 101, hands the client's connection over to a byte splice
// with the service's until either side ends, when both are closed. WebSocket frames pass
// through unread: pings, closes and their codes are the service's.
type tunnel struct {
	name     string
	addr     *replicaSet
	secret   []byte
	log      *slog.Logger
	retryFor time.Duration
}

func newTunnel(name, base string, secret []byte, log *slog.Logger) (*tunnel, error) {
	addr, err := newReplicaSet(base)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &tunnel{name: name, addr: addr, secret: secret, log: log, retryFor: upstreamRetryFor}, nil
}

// tunnelQueryDrop are the query parameters the service never gets: the credential.
var tunnelQueryDrop = []string{"session"}

// handle asks the service for the client's upgrade and, on its 101, splices the two
// connections; any other answer of the service is passed on as it is.
func (t *tunnel) handle(c *fiber.Ctx) error {
	if err := httpx.RequireUpgrade(c); err != nil {
		return err
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	if err := t.request(c, req); err != nil {
		return httpx.RefuseUpgrade(c, apperr.Internal(err))
	}
	up, attempts, err := t.dial(req)
	if err != nil {
		return t.failed(c, err, "attempts", attempts)
	}
	br, resp, err := t.handshake(up, req)
	if err != nil {
		_ = up.Close()
		fasthttp.ReleaseResponse(resp)
		return t.failed(c, err)
	}
	defer fasthttp.ReleaseResponse(resp)
	t.answer(c, up, br, resp)
	return nil
}

// request is the client's upgrade request as the service gets it: Connection and Upgrade make
// the upgrade and stay; the other hop-by-hop headers go, and a caller header only the gateway
// may set (the caller it authenticated is signed in); the credential leaves the query string.
func (t *tunnel) request(c *fiber.Ctx, req *fasthttp.Request) error {
	c.Request().Header.CopyTo(&req.Header)
	for _, h := range otherHopHeaders {
		req.Header.Del(h)
	}
	req.Header.Del(httpx.CallerHeader)
	uri := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(uri)
	c.Request().URI().CopyTo(uri)
	// The path canonicalPaths checked, not a normalised one.
	uri.DisablePathNormalizing = true
	for _, q := range tunnelQueryDrop {
		uri.QueryArgs().Del(q)
	}
	req.Header.SetRequestURIBytes(uri.RequestURI())
	if caller := httpx.CallerOf(c); caller != nil {
		sig, err := httpx.SignCaller(t.secret, caller, time.Now())
		if err != nil {
			return err
		}
		req.Header.Set(httpx.CallerHeader, sig)
	}
	httpx.InjectTrace(c, req.Header.Set)
	return nil
}

// failed logs an upgrade the service did not take (attrs say how far it got) and refuses it
// the way a browser's WebSocket can see.
func (t *tunnel) failed(c *fiber.Ctx, err error, attrs ...any) error {
	args := append([]any{"upstream", t.name, "addr", t.addr.String(), "route", c.Route().Path}, attrs...)
	t.log.WarnContext(c.UserContext(), "upstream upgrade failed", append(args, "requestId", httpx.RequestID(c), "error", err)...)
	return httpx.RefuseUpgrade(c, unavailable(err))
}

// answer passes the service's handshake answer on: a plain refusal (its envelope) as it is, a
// 101 by handing the client's connection to a splice with up.
func (t *tunnel) answer(c *fiber.Ctx, up net.Conn, br *bufio.Reader, resp *fasthttp.Response) {
	c.Status(resp.StatusCode())
	resp.Header.VisitAll(func(k, v []byte) {
		switch string(k) {
		case fiber.HeaderContentLength, httpx.RequestIDHeader:
			return
		}
		c.Response().Header.SetBytesKV(k, v)
	})
	if resp.StatusCode() != fiber.StatusSwitchingProtocols {
		_ = up.Close()
		c.Response().SetBodyRaw(append([]byte(nil), resp.Body()...))
		return
	}
	_ = up.SetDeadline(time.Time{})
	// What the service sent after its 101 (its welcome, usually) goes first; the header-sized
	// reader is then let go, so an open tunnel holds only its two copy buffers.
	pending := make([]byte, br.Buffered())
	_, _ = io.ReadFull(br, pending)
	upR := io.MultiReader(bytes.NewReader(pending), up)
	c.Context().Hijack(func(client net.Conn) { splice(client, up, upR) })
}

// dial connects to the next replica of the service in turn (the others at once when it refuses
// the connection), setting req's Host to it, and retries while every one refuses (a restart)
// for at most retryFor, with the forwarder's backoff.
func (t *tunnel) dial(req *fasthttp.Request) (net.Conn, int, error) {
	deadline := time.Now().Add(t.retryFor)
	backoff := upstreamBackoffMin
	for attempt := 1; ; attempt++ {
		var conn net.Conn
		var err error
		first := t.addr.start("")
		for i := range t.addr.hosts {
			host := t.addr.hosts[(first+i)%len(t.addr.hosts)]
			if conn, err = net.DialTimeout("tcp", host, tunnelHandshake); err == nil {
				req.Header.SetHost(host)
				return conn, attempt, nil
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				break
			}
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().Add(backoff).After(deadline) {
			return nil, attempt, err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, upstreamBackoffMax)
	}
}

// handshake writes req on up and reads the answer's header (bounded by tunnelMaxHeader) and, for
// anything but a 101, its body (bounded by tunnelMaxBody). The reader it returns may hold what
// the service sent after its 101.
func (t *tunnel) handshake(up net.Conn, req *fasthttp.Request) (*bufio.Reader, *fasthttp.Response, error) {
	resp := fasthttp.AcquireResponse()
	_ = up.SetDeadline(time.Now().Add(tunnelHandshake))
	bw := bufio.NewWriter(up)
	if err := req.Write(bw); err != nil {
		return nil, resp, err
	}
	if err := bw.Flush(); err != nil {
		return nil, resp, err
	}
	br := bufio.NewReaderSize(up, tunnelMaxHeader)
	if err := resp.Header.Read(br); err != nil {
		return nil, resp, err
	}
	if resp.StatusCode() == fiber.StatusSwitchingProtocols {
		return br, resp, nil
	}
	n := resp.Header.ContentLength()
	if n < 0 || n > tunnelMaxBody {
		return nil, resp, fmt.Errorf("upstream refused the upgrade with %d and a body of length %d", resp.StatusCode(), n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, resp, err
	}
	resp.SetBodyRaw(body)
	return br, resp, nil
}

// spliceBuffers are the tunnels' copy buffers: small, since room frames are small and a large
// one passes in pieces, and many tunnels sit idle (io.Copy's own would be 32 KiB each way).
var spliceBuffers = sync.Pool{New: func() any { b := make([]byte, 4<<10); return &b }}

// copyChunks copies src to dst through a pooled buffer until either fails. The wrappers hide
// ReadFrom and WriteTo, which would bring their own 32 KiB buffer instead.
func copyChunks(dst io.Writer, src io.Reader) {
	bp := spliceBuffers.Get().(*[]byte)
	defer spliceBuffers.Put(bp)
	_, _ = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *bp)
}

// splice copies bytes both ways until either side ends, then ends the other. The client's
// connection belongs to the server, which closes it when this returns; an expired deadline is
// what unblocks a read on it.
func splice(client, up net.Conn, upR io.Reader) {
	done := make(chan struct{}, 2)
	go func() { copyChunks(up, client); done <- struct{}{} }()
	go func() { copyChunks(client, upR); done <- struct{}{} }()
	<-done
	_ = up.Close()
	_ = client.SetDeadline(time.Now())
	<-done
}
