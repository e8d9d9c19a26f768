package httpx

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fasthttp/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/splathost/splathost/internal/apperr"
)

// WebSocket routes (the multiplayer room) answer a refusal the way a browser can see it: a
// browser's WebSocket exposes neither the status nor the body of a refused handshake (only a
// close with code 1006), so a refused request is upgraded and then closed at once, after one
// text frame {type:'error', code, message}, with the close code CloseCode gives the error.

// Close codes of splathost's WebSocket routes beyond the 4000+status ones (RFC 6455 7.4.1).
const (
	// CloseServiceRestart (1012) asks the client to reconnect: the process is shutting down, or
	// must resynchronise it.
	CloseServiceRestart = websocket.CloseServiceRestart
	// CloseTryAgainLater (1013): a dependency (the upstream service) is unavailable for now.
	CloseTryAgainLater = websocket.CloseTryAgainLater
	// CloseInternal (1011): an unexpected failure, logged.
	CloseInternal = websocket.CloseInternalServerErr
	// CloseTooBig (1009): a message, or what it would make, is over its limit.
	CloseTooBig = websocket.CloseMessageTooBig
	// ClosePolicy (1008): the client does not read what it is sent fast enough.
	ClosePolicy = websocket.ClosePolicyViolation
)

// CloseCode is the WebSocket close code of err: 4000 plus the status of a 4xx (4400 malformed,
// 4401 bad token, 4403 not allowed, 4404 no such scene, 4409 full, 4429 too many messages),
// 1013 when an upstream is unavailable (502, 503, 504) and 1011 for anything else.
func CloseCode(err error) int {
	e := apperr.From(err)
	switch {
	case e.Status >= 400 && e.Status < 500:
		return 4000 + e.Status
	case e.Status == http.StatusBadGateway || e.Status == http.StatusServiceUnavailable || e.Status == http.StatusGatewayTimeout:
		return CloseTryAgainLater
	}
	return CloseInternal
}

// ErrorCode is the code of the {type:'error'} frame for err: the code its REST envelope would
// carry (apperr's Code), so a room and an HTTP answer name one cause alike.
func ErrorCode(err error) string { return apperr.From(err).Code() }

// ErrorFrame is the {type:'error', code, message} text frame sent before a close.
func ErrorFrame(code, message string) []byte {
	b, _ := json.Marshal(struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}{"error", code, message})
	return b
}

// CloseReason cuts a close reason to the 123 bytes a close frame can carry, at a character
// boundary.
func CloseReason(s string) string {
	const max = 123
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// wsCloseWait bounds how long a refusal waits for the client's close frame before it drops
// the connection. Dropping it with the client's frames unread would make the kernel reset the
// connection, and a reset can discard the close frame before the client reads it.
const wsCloseWait = 2 * time.Second

// Upgrader is the one WebSocket upgrader of splathost's routes. Any origin may connect: the
// credential is the session token in the URL, never an ambient cookie, so a page on another
// origin gains nothing it did not already hold (no cross-site WebSocket hijacking). Small
// buffers and a shared write-buffer pool keep an idle connection cheap (the room holds
// thousands); messages larger than a buffer are still read and written whole.
var Upgrader = websocket.FastHTTPUpgrader{
	ReadBufferSize:  2 << 10,
	WriteBufferSize: 2 << 10,
	WriteBufferPool: &sync.Pool{},
	CheckOrigin:     func(*fasthttp.RequestCtx) bool { return true },
}

// RefuseUpgrade answers a WebSocket upgrade request with the refusal err: upgraded, one error
// frame, a close with CloseCode(err). A request that is not an upgrade gets err as usual. A 5xx
// is logged by the caller (its cause never reaches the client).
func RefuseUpgrade(c *fiber.Ctx, err error) error {
	if !websocket.FastHTTPIsWebSocketUpgrade(c.Context()) {
		return err
	}
	e := apperr.From(err)
	code, frame := CloseCode(e), ErrorFrame(ErrorCode(e), e.Message)
	reason := CloseReason(e.Message)
	return Upgrader.Upgrade(c.Context(), func(ws *websocket.Conn) { CloseWebSocket(ws, frame, code, reason) })
}

// CloseWebSocket sends frame (when not nil) and a close with code and reason, then waits up to
// wsCloseWait for the client's close before it closes the connection.
func CloseWebSocket(ws *websocket.Conn, frame []byte, code int, reason string) {
	deadline := time.Now().Add(wsCloseWait)
	_ = ws.SetWriteDeadline(deadline)
	if frame != nil {
		_ = ws.WriteMessage(websocket.TextMessage, frame)
	}
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, CloseReason(reason)), deadline)
	_ = ws.SetReadDeadline(deadline)
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			break
		}
	}
	_ = ws.Close()
}

// IsWebSocketUpgrade reports whether the request asks for a WebSocket.
func IsWebSocketUpgrade(c *fiber.Ctx) bool { return websocket.FastHTTPIsWebSocketUpgrade(c.Context()) }

// errNotUpgrade is the answer of a WebSocket route to a plain request.
var errNotUpgrade = apperr.New(http.StatusUpgradeRequired, "this route is a WebSocket: connect with ws:// or wss://")

// RequireUpgrade is the 426 of a WebSocket route asked a plain HTTP request, or nil.
func RequireUpgrade(c *fiber.Ctx) error {
	if IsWebSocketUpgrade(c) {
		return nil
	}
	c.Set(fiber.HeaderUpgrade, "websocket")
	return errNotUpgrade
}
