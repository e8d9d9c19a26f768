package apperr

import "net/http"

// The codes an answer has when its error sets none: one per status (StatusCode). Errors whose
// cause a client acts on differently carry a code of their own (the customer codes below, and
// plan_limit, STORAGE_QUOTA_EXCEEDED, IDEMPOTENCY_KEY_REUSED, ... set where they arise).
// api/openapi.yaml lists every code as the ErrorCode enum; api's tests hold this table to it.
const (
	// CodeValidation is a 400: the request is malformed; issues name each problem.
	CodeValidation = "VALIDATION"
	// CodeUnauthorized is a 401 of the credentials: missing, wrong or expired key, token or
	// session.
	CodeUnauthorized = "UNAUTHORIZED"
	// CodeForbidden is a 403: the credentials are valid but may not do this.
	CodeForbidden = "FORBIDDEN"
	// CodeNotFound is a 404: no such resource for these credentials, or no such route.
	CodeNotFound = "NOT_FOUND"
	// CodeMethodNotAllowed is a 405.
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	// CodeRequestTimeout is a 408: the request's body did not arrive in time.
	CodeRequestTimeout = "REQUEST_TIMEOUT"
	// CodeConflict is a 409: the resource's state refuses the request.
	CodeConflict = "CONFLICT"
	// CodeIntegrationRevoked is the 410 of every call made with a revoked integration's keys
	// (the room's close 4410 names it too).
	CodeIntegrationRevoked = "INTEGRATION_REVOKED"
	// CodePreconditionFailed is a 412 of a conditional asset request.
	CodePreconditionFailed = "PRECONDITION_FAILED"
	// CodePayloadTooLarge is a 413 of a body or message over its size limit (a storage cap
	// is STORAGE_QUOTA_EXCEEDED instead).
	CodePayloadTooLarge = "PAYLOAD_TOO_LARGE"
	// CodeRangeNotSatisfiable is a 416 of a ranged asset request.
	CodeRangeNotSatisfiable = "RANGE_NOT_SATISFIABLE"
	// CodeUnprocessable is a 422.
	CodeUnprocessable = "UNPROCESSABLE"
	// CodeUpgradeRequired is the 426 of a plain HTTP request to a WebSocket route.
	CodeUpgradeRequired = "UPGRADE_REQUIRED"
	// CodeRateLimited is a 429: a rate limit is used up; retry after Retry-After.
	CodeRateLimited = "RATE_LIMITED"
	// CodeHeadersTooLarge is a 431.
	CodeHeadersTooLarge = "HEADERS_TOO_LARGE"
	// CodeClientError is another 4xx than those above (none is answered today; the code keeps
	// the enum closed should one be).
	CodeClientError = "CLIENT_ERROR"
	// CodeInternal is a 500, and any 5xx without a code of its own: a failure of the service.
	CodeInternal = "INTERNAL"
)

// Codes of the customer (external user) a request names, so an integrator can tell them from
// a wrong key (401 UNAUTHORIZED) or a missing scene (404 NOT_FOUND) whatever the status the
// route answers with.
const (
	// CodeCustomerNotProvisioned: the integration has no customer of this external user id
	// (never provisioned with PUT /api/v1/external-user, or deleted).
	CodeCustomerNotProvisioned = "CUSTOMER_NOT_PROVISIONED"
	// CodeCustomerInactive: the customer exists but is inactive, suspended or being deleted.
	CodeCustomerInactive = "CUSTOMER_INACTIVE"
)

// statusCodes are the codes of the statuses the service answers (StatusCode).
var statusCodes = map[int]string{
	http.StatusBadRequest:                   CodeValidation,
	http.StatusUnauthorized:                 CodeUnauthorized,
	http.StatusForbidden:                    CodeForbidden,
	http.StatusNotFound:                     CodeNotFound,
	http.StatusMethodNotAllowed:             CodeMethodNotAllowed,
	http.StatusRequestTimeout:               CodeRequestTimeout,
	http.StatusConflict:                     CodeConflict,
	http.StatusGone:                         CodeIntegrationRevoked,
	http.StatusPreconditionFailed:           CodePreconditionFailed,
	http.StatusRequestEntityTooLarge:        CodePayloadTooLarge,
	http.StatusRequestedRangeNotSatisfiable: CodeRangeNotSatisfiable,
	http.StatusUnprocessableEntity:          CodeUnprocessable,
	http.StatusUpgradeRequired:              CodeUpgradeRequired,
	http.StatusTooManyRequests:              CodeRateLimited,
	http.StatusRequestHeaderFieldsTooLarge:  CodeHeadersTooLarge,
	http.StatusInternalServerError:          CodeInternal,
	// A gateway's 502 (no replica answered, or a keyed request settled without effect) and a
	// 503 both mean nothing changed: retry.
	http.StatusBadGateway:         CodeUnavailable,
	http.StatusServiceUnavailable: CodeUnavailable,
	http.StatusGatewayTimeout:     CodeOutcomeUnknown,
}

// StatusCode is the code of an error of the given status that sets none of its own.
func StatusCode(status int) string {
	if code, ok := statusCodes[status]; ok {
		return code
	}
	if status >= 400 && status < 500 {
		return CodeClientError
	}
	return CodeInternal
}

// StatusCodes returns every code StatusCode can give, for the tests that hold the API
// document's enum to it.
func StatusCodes() []string {
	codes := []string{CodeClientError, CodeInternal}
	for _, c := range statusCodes {
		codes = append(codes, c)
	}
	return codes
}

// CustomerNotProvisioned is the answer, with the given status (the route's: 401 on uploads,
// 403 on a scoped mint, 404 elsewhere), about a customer the integration does not have.
func CustomerNotProvisioned(status int) *Error {
	return New(status, "external user not found: provision it with PUT /api/v1/external-user").
		With("code", CodeCustomerNotProvisioned)
}

// CustomerInactive is the answer, with the route's status, about a customer that exists but
// may not act (inactive, suspended or being deleted); message says which.
func CustomerInactive(status int, message string) *Error {
	return New(status, message).With("code", CodeCustomerInactive)
}
