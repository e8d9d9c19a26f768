package httpx

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
)

// ErrorHandler maps every error a handler or Fiber itself returns to the interface's envelope.
// Internal failures are logged with their cause and answered with a generic message.
func ErrorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		e := toAppErr(err)
		if e.Status >= 500 {
			log.ErrorContext(c.UserContext(), "request failed",
				"requestId", RequestID(c), "method", c.Method(), "path", c.Path(), "error", e.Cause)
		}
		if isPage(c) {
			return sendErrorPage(c, e)
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		retry := e.RetryAfter
		if retry == 0 && e.Status >= http.StatusBadGateway && e.Status <= http.StatusGatewayTimeout {
			retry = apperr.UnavailableRetryAfter // a gateway's "service unavailable"
		}
		if retry > 0 {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retry))
		}
		return c.Status(e.Status).JSON(e.Body())
	}
}

func toAppErr(err error) *apperr.Error {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case http.StatusNotFound:
			return apperr.NotFound("route not found")
		case http.StatusMethodNotAllowed:
			return apperr.New(fe.Code, "method not allowed")
		case http.StatusRequestEntityTooLarge:
			return apperr.New(fe.Code, "request body too large")
		case http.StatusRequestHeaderFieldsTooLarge:
			return apperr.New(fe.Code, "request headers too large")
		case http.StatusBadRequest:
			return apperr.Invalid("bad request", "request: malformed")
		case http.StatusRequestTimeout:
			return apperr.New(fe.Code, "request timeout")
		}
		if fe.Code >= 400 && fe.Code < 500 {
			return apperr.New(fe.Code, http.StatusText(fe.Code))
		}
		return apperr.Internal(fe)
	}
	return apperr.Internal(err)
}
