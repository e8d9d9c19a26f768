// Package apperr is the one error type of splathost and its mapping to the interface's error
// envelope: { status: 'error', code, message, issues?, ...extra fields }. Every envelope has a
// code: the one an error sets (Extra["code"]), else the one its status implies (StatusCode), so
// no answer can lack one.
package apperr

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is an error a client may see. Status is the HTTP status, Message is safe to show,
// Issues name each validation problem (400-level only), and Extra carries the extra fields some
// envelopes have (code, scope, dimension, limit, jobId, ...). Cause is logged, never sent.
type Error struct {
	Status  int
	Message string
	Issues  []string
	Extra   map[string]any
	Cause   error
	// RetryAfter, when positive, is the Retry-After header of the answer in seconds.
	RetryAfter int
}

// Error implements error.
func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Message, e.Cause)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Cause }

// With returns a copy of e with an extra envelope field set.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Extra = make(map[string]any, len(e.Extra)+1)
	for k, v := range e.Extra {
		c.Extra[k] = v
	}
	c.Extra[key] = value
	return &c
}

// New returns an error with the given status and client-safe message.
func New(status int, message string) *Error { return &Error{Status: status, Message: message} }

// Invalid is a 400 whose issues name each problem of the request.
func Invalid(message string, issues ...string) *Error {
	return &Error{Status: http.StatusBadRequest, Message: message, Issues: issues}
}

// Unauthorized is a 401.
func Unauthorized(message string) *Error { return New(http.StatusUnauthorized, message) }

// Forbidden is a 403.
func Forbidden(message string) *Error { return New(http.StatusForbidden, message) }

// NotFound is a 404. Its message never says whether the resource exists elsewhere.
func NotFound(message string) *Error { return New(http.StatusNotFound, message) }

// Conflict is a 409.
func Conflict(message string) *Error { return New(http.StatusConflict, message) }

// Gone is a 410, the answer to every call made with a revoked integration's keys.
func Gone(message string) *Error { return New(http.StatusGone, message) }

// Internal wraps an unexpected failure: the client sees a generic 500, the cause is logged. A
// cause that says a store was unreachable or too slow (Unreachable) is a 503 instead.
func Internal(cause error) *Error {
	if Unreachable(cause) {
		return Unavailable(cause)
	}
	return &Error{Status: http.StatusInternalServerError, Message: "internal server error", Cause: cause}
}

// Codes of the answers that say what became of a request the service could not finish.
const (
	// CodeUnavailable: a store the request needs was down or too slow; what the request
	// started was rolled back, so a retry is safe.
	CodeUnavailable = "UNAVAILABLE"
	// CodeOutcomeUnknown: the request may or may not have taken effect (its commit was sent and
	// the connection broke before the answer).
	CodeOutcomeUnknown = "OUTCOME_UNKNOWN"
)

// UnavailableRetryAfter is the Retry-After of an Unavailable answer, in seconds: a restarting
// database or object store is back within seconds (the dev stack's come back in under one).
const UnavailableRetryAfter = 1

// Unavailable is a 503 with a Retry-After: a store the request needs (Postgres, the object
// store) could not be reached or did not answer within the request's budget. The request's
// transaction was rolled back before the answer (a broken COMMIT is OutcomeUnknown instead), so
// nothing changed.
func Unavailable(cause error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Cause: cause, RetryAfter: UnavailableRetryAfter,
		Extra:   map[string]any{"code": CodeUnavailable},
		Message: "a store this request needs is unavailable or too slow; the request changed nothing, retry"}
}

// OutcomeUnknown is the 504 of a request whose effect may have been committed or not: its
// commit was sent and the answer lost. A retry with the same Idempotency-Key tells which.
func OutcomeUnknown(cause error) *Error {
	return &Error{Status: http.StatusGatewayTimeout, Cause: cause, RetryAfter: UnavailableRetryAfter,
		Extra:   map[string]any{"code": CodeOutcomeUnknown},
		Message: "the outcome of this request is unknown: it may have taken effect; retry with the same Idempotency-Key to learn it, or read the resource before retrying without one"}
}

// From returns err as an *Error, wrapping anything unexpected as Internal.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}

// Code is e's machine-readable code: the one set with With("code", ...), else StatusCode's.
func (e *Error) Code() string {
	if code, ok := e.Extra["code"].(string); ok && code != "" {
		return code
	}
	return StatusCode(e.Status)
}

// Body is the JSON envelope of e. Issues appear only on 4xx errors that have them.
func (e *Error) Body() map[string]any {
	body := make(map[string]any, 4+len(e.Extra))
	for k, v := range e.Extra {
		body[k] = v
	}
	body["status"] = "error"
	body["code"] = e.Code()
	body["message"] = e.Message
	if len(e.Issues) > 0 && e.Status >= 400 && e.Status < 500 {
		body["issues"] = e.Issues
	}
	return body
}
