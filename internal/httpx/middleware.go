package httpx

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const requestIDKey = "splathost.requestId"

// RequestIDs accepts a well-formed incoming X-Request-Id (so an integrator can correlate) or
// makes one, and echoes it on the response.
func RequestIDs() fiber.Handler {
	return func(c *fiber.Ctx) error {
		// Clone: Fiber's strings alias a buffer reused by the next request, and the id outlives
		// this one in logs and exported spans.
		id := strings.Clone(c.Get(RequestIDHeader))
		if !validRequestID(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
			c.Request().Header.Set(RequestIDHeader, id)
		}
		c.Locals(requestIDKey, id)
		c.Set(RequestIDHeader, id)
		return c.Next()
	}
}

func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.' || ch == ':') {
			return false
		}
	}
	return true
}

// RequestID returns the request's id.
func RequestID(c *fiber.Ctx) string {
	id, _ := c.Locals(requestIDKey).(string)
	return id
}

// forwardedKey marks a request a gateway forwarded (TrustSignedCaller accepted its caller).
const forwardedKey = "splathost.forwarded"

// quietBelow is how long a forwarded request may take before its service logs it anyway.
const quietBelow = 500 * time.Millisecond

// AccessLog writes one JSON line per request. It logs the path without the query string, which
// may hold a session token, and never a header value. A request a gateway forwarded is the
// gateway's line already (the same request id): its service logs it at debug level only, unless
// it failed (5xx) or was slow (quietBelow), because a second line per request cost a split
// service about a tenth of its CPU (the JSON encoding and a write to the log).
func AccessLog(log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		if err != nil {
			// Run the error handler now so the logged status is the one the client gets.
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		took := time.Since(start)
		level := slog.LevelInfo
		if fwd, _ := c.Locals(forwardedKey).(bool); fwd && c.Response().StatusCode() < 500 && took < quietBelow {
			level = slog.LevelDebug
		}
		if !log.Enabled(c.UserContext(), level) {
			return nil
		}
		attrs := make([]slog.Attr, 0, 6)
		attrs = append(attrs, slog.String("requestId", RequestID(c)), slog.String("method", c.Method()),
			slog.String("path", c.Path()), slog.Int("status", c.Response().StatusCode()),
			slog.Float64("durationMs", float64(took.Microseconds())/1000))
		if caller := CallerOf(c); caller != nil && caller.IntegrationID != "" {
			attrs = append(attrs, slog.String("integrationId", caller.IntegrationID))
		}
		log.LogAttrs(c.UserContext(), level, "request", attrs...)
		return nil
	}
}

// Tracing starts a server span per request, continuing a trace the caller propagated
// (W3C traceparent), so a request is one trace from the gateway through the service.
func Tracing(component string) fiber.Handler {
	tracer := otel.Tracer("github.com/splathost/splathost/" + component)
	return func(c *fiber.Ctx) error {
		carrier := headerCarrier{c}
		ctx := otel.GetTextMapPropagator().Extract(c.UserContext(), carrier)
		ctx, span := tracer.Start(ctx, "HTTP "+c.Method(), trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		c.SetUserContext(ctx)
		err := c.Next()
		if !span.IsRecording() {
			return err // tracing is off: skip building attributes nobody reads
		}
		// Named by the route template once routing is done: raw paths hold ids, and span names
		// are meant to group requests.
		route := strings.Clone(routeLabel(c, c.Response().StatusCode()))
		span.SetName(strings.Clone(c.Method()) + " " + route)
		span.SetAttributes(attribute.String("http.route", route))
		status := c.Response().StatusCode()
		if err != nil {
			status = toAppErr(err).Status
		}
		// Spans are exported after the request ends, so attributes must own their bytes.
		span.SetAttributes(attribute.String("http.request.method", strings.Clone(c.Method())),
			attribute.Int("http.response.status_code", status),
			attribute.String("splathost.request_id", RequestID(c)))
		if status >= 500 {
			span.SetStatus(codes.Error, "server error")
		}
		return err
	}
}

// InjectTrace writes the current trace context into outgoing request headers.
func InjectTrace(c *fiber.Ctx, set func(key, value string)) {
	otel.GetTextMapPropagator().Inject(c.UserContext(), setterCarrier(set))
}

type headerCarrier struct{ c *fiber.Ctx }

func (h headerCarrier) Get(key string) string { return h.c.Get(key) }
func (h headerCarrier) Set(key, value string) { h.c.Request().Header.Set(key, value) }
func (h headerCarrier) Keys() []string {
	var keys []string
	h.c.Request().Header.VisitAll(func(k, _ []byte) { keys = append(keys, string(k)) })
	return keys
}

type setterCarrier func(key, value string)

func (s setterCarrier) Get(string) string     { return "" }
func (s setterCarrier) Set(key, value string) { s(key, value) }
func (s setterCarrier) Keys() []string        { return nil }

var _ propagation.TextMapCarrier = setterCarrier(nil)
