package gateway

import (
	"bytes"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/splathost/splathost/internal/apperr"
)

// Unambiguous framing (docs/security.md). fasthttp frames a request by the last of several
// Content-Length headers, and by Transfer-Encoding (any coding but identity read as chunked)
// when both are present, silently: a proxy in front that takes the first length, or the
// length rather than the coding, sees another body, and the bytes between the two readings
// become a request one side never saw (request smuggling). RFC 9112 section 6.3 makes such a
// request an error, so the gateway refuses every request whose header a second reader could
// frame differently, before any route and before its body is read.

// AmbiguousFramingCode is the envelope's code of a request refused for its framing.
const AmbiguousFramingCode = "AMBIGUOUS_FRAMING"

// guardFraming installs the framing rule on app's server: when a request's header is
// ambiguous, its body is not read (the header parser's length is the one in doubt; reading by it
// would wait for bytes that may never come, or swallow the next request), and the first
// middleware answers 400 and closes the connection, since nothing after the header on it can be
// framed either.
func guardFraming(app *fiber.App) fiber.Handler {
	app.Server().HeaderReceived = func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		if framingProblem(h.RawHeaders()) != "" {
			h.SetContentLength(0)
		}
		return fasthttp.RequestConfig{}
	}
	return func(c *fiber.Ctx) error {
		problem := framingProblem(c.Request().Header.RawHeaders())
		if problem == "" {
			return c.Next()
		}
		c.Context().SetConnectionClose()
		return apperr.Invalid("request framing is ambiguous", "headers: "+problem).With("code", AmbiguousFramingCode)
	}
}

var (
	headerContentLength    = []byte("Content-Length")
	headerTransferEncoding = []byte("Transfer-Encoding")
	codingChunked          = []byte("chunked")
)

// framingProblem says why a request header, as received (raw header lines, without the request
// line), does not frame its body one way for every reader, or "". Refused: Content-Length more
// than once (equal values included: the header is never legitimately repeated, and readers
// differ on lists), Content-Length beside Transfer-Encoding, Transfer-Encoding more than once,
// and a Transfer-Encoding other than chunked (fasthttp reads any coding as chunked; the RFC
// says a request whose final coding is not chunked has no determinable length). It runs on
// every request and allocates nothing for a header that passes.
func framingProblem(raw []byte) string {
	var lengths, codings int
	var coding []byte
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		switch key := line[:colon]; {
		case bytes.EqualFold(key, headerContentLength):
			lengths++
		case bytes.EqualFold(key, headerTransferEncoding):
			codings++
			coding = bytes.TrimSpace(line[colon+1:])
		}
	}
	switch {
	case lengths > 1:
		return fmt.Sprintf("Content-Length appears %d times; send it once", lengths)
	case lengths > 0 && codings > 0:
		return "Content-Length beside Transfer-Encoding; send one of them"
	case codings > 1:
		return fmt.Sprintf("Transfer-Encoding appears %d times; send it once", codings)
	case codings == 1 && !bytes.EqualFold(coding, codingChunked):
		if len(coding) > 40 {
			coding = coding[:40]
		}
		return fmt.Sprintf("Transfer-Encoding %q is not supported; send chunked or Content-Length", coding)
	}
	return ""
}
