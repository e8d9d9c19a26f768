package splathost

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Error codes the service names in its error envelopes: every error answer has one (the
// ErrorCode enum of api/openapi.yaml). Branch on them with [IsCode] or errors.As on [*APIError]
// rather than on messages or statuses: one status can have several causes (a 401 is a wrong key
// or, on uploads, a customer never provisioned).
const (
	// CodeValidation is a 400: the request is malformed; APIError.Issues names each problem.
	CodeValidation = "VALIDATION"
	// CodeUnauthorized is a 401 of the credentials: a missing, wrong or revoked-and-rotated
	// secret key, or an invalid or expired session token.
	CodeUnauthorized = "UNAUTHORIZED"
	// CodeForbidden is a 403: the credentials are valid but may not do this.
	CodeForbidden = "FORBIDDEN"
	// CodeNotFound is a 404: no such scene, job, endpoint or route for these credentials.
	CodeNotFound = "NOT_FOUND"
	// CodeMethodNotAllowed is a 405.
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	// CodeRequestTimeout is a 408: the request's body did not arrive in time.
	CodeRequestTimeout = "REQUEST_TIMEOUT"
	// CodeConflict is a 409: the resource's state refuses the request.
	CodeConflict = "CONFLICT"
	// CodeIntegrationRevoked is the 410 of every call made with a revoked integration's keys.
	CodeIntegrationRevoked = "INTEGRATION_REVOKED"
	// CodePreconditionFailed is a 412 of a conditional asset request.
	CodePreconditionFailed = "PRECONDITION_FAILED"
	// CodePayloadTooLarge is a 413 of a body over its size limit (a storage cap is
	// [CodeStorageQuotaExceeded]).
	CodePayloadTooLarge = "PAYLOAD_TOO_LARGE"
	// CodeRangeNotSatisfiable is a 416 of a ranged asset request.
	CodeRangeNotSatisfiable = "RANGE_NOT_SATISFIABLE"
	// CodeUnprocessable is a 422 without a code of its own.
	CodeUnprocessable = "UNPROCESSABLE"
	// CodeUpgradeRequired is the 426 of a plain HTTP request to a WebSocket route.
	CodeUpgradeRequired = "UPGRADE_REQUIRED"
	// CodeRateLimited is the 429 of a rate limit: nothing was done, and the request may be sent
	// again after the Retry-After seconds, which the client does on its own (any method).
	CodeRateLimited = "RATE_LIMITED"
	// CodeHeadersTooLarge is a 431.
	CodeHeadersTooLarge = "HEADERS_TOO_LARGE"
	// CodeClientError is another 4xx than those named here.
	CodeClientError = "CLIENT_ERROR"
	// CodeInternal is a 500 (and another 5xx): a failure of the service. The client retries it.
	CodeInternal = "INTERNAL"
	// CodeUnavailable is a 502 or 503: nothing changed; the client retries it.
	CodeUnavailable = "UNAVAILABLE"
	// CodeOutcomeUnknown is a 504: the request may have taken effect. The client retries it with
	// the call's Idempotency-Key, which tells the outcome.
	CodeOutcomeUnknown = "OUTCOME_UNKNOWN"

	// CodeCustomerNotProvisioned: the integration has no customer of this external user id
	// (never provisioned with [Client.PutCustomer], or deleted). The status is the route's: 401
	// on the upload requests, 403 on a scoped session mint, 404 elsewhere.
	CodeCustomerNotProvisioned = "CUSTOMER_NOT_PROVISIONED"
	// CodeCustomerInactive: the customer exists but is inactive, suspended or being deleted
	// (401, or 403 on a mint).
	CodeCustomerInactive = "CUSTOMER_INACTIVE"
	// CodeStorageQuotaExceeded is the 413 of a storage cap; see [StorageQuotaDetails].
	CodeStorageQuotaExceeded = "STORAGE_QUOTA_EXCEEDED"
	// CodePlanLimit is the 403 of a plan or scene-cap check; see [PlanLimitDetails].
	CodePlanLimit = "plan_limit"
	// CodeCloneInProgress is the 429 of a second clone; see [CloneInProgressDetails].
	CodeCloneInProgress = "CLONE_IN_PROGRESS"
	// CodeSourceFilesMissing is the 409 of a clone whose source lost its files.
	CodeSourceFilesMissing = "SOURCE_FILES_MISSING"
	// CodeCloneAbandoned is the 409 of a clone job nobody polled while it copied.
	CodeCloneAbandoned = "CLONE_ABANDONED"
	// CodeAuthRequired is the 403 of the editor embed asking its host for a scoped session.
	CodeAuthRequired = "AUTH_REQUIRED"
	// CodeNonCanonicalPath is the 400 of a request path with dot segments, double encoding or
	// other non-canonical forms.
	CodeNonCanonicalPath = "NON_CANONICAL_PATH"
	// CodeTooManyOpenUploads is the 429 of an upload request while the customer's (or the
	// editor session's) open uploads are at their bound: nothing was signed. It is not retried
	// on its own: commit or abort an open upload, or wait the Retry-After seconds (until one
	// expires), then ask again.
	CodeTooManyOpenUploads = "TOO_MANY_OPEN_UPLOADS"
)

// APIError is a non-2xx answer of the service: the spec's error envelope plus the HTTP status.
// Reach it with errors.As; the detail fields are set only for the envelope they belong to, so
// a caller can branch on them without comparing codes.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the envelope's human-readable message.
	Message string
	// Issues lists the validation problems of a 400 (empty otherwise).
	Issues []string
	// Code is the envelope's machine-readable code, when the service gives one.
	Code string
	// RequestID is the X-Request-Id of the answer, for support requests.
	RequestID string
	// Storage is set for STORAGE_QUOTA_EXCEEDED (413).
	Storage *StorageQuotaDetails
	// PlanLimit is set for plan_limit (403).
	PlanLimit *PlanLimitDetails
	// CloneInProgress is set for CLONE_IN_PROGRESS (429).
	CloneInProgress *CloneInProgressDetails
	// Body is the raw answer, for envelope fields this type does not model.
	Body []byte
}

// StorageQuotaDetails are the figures of a 413 STORAGE_QUOTA_EXCEEDED. For scope "customer"
// they are the customer's allocation (raise limitBytes with PutCustomer to unblock); for
// "account" they are the whole account's aggregate.
type StorageQuotaDetails struct {
	Scope          string `json:"scope"`
	UsedBytes      int64  `json:"usedBytes"`
	LimitBytes     int64  `json:"limitBytes"`
	RemainingBytes int64  `json:"remainingBytes"`
	RequestedBytes int64  `json:"requestedBytes"`
}

// PlanLimitDetails are the fields of a 403 plan_limit. Limit is nil for a dimension the plan
// lacks entirely (cloning). For Scope "customer" the UpgradeURL targets the integrator's own
// plan and is to be ignored: raise the customer's maxSplats instead.
type PlanLimitDetails struct {
	Dimension  string `json:"dimension"`
	Limit      *int64 `json:"limit"`
	Current    *int64 `json:"current"`
	UpgradeURL string `json:"upgradeUrl"`
	Scope      string `json:"scope"`
}

// CloneInProgressDetails name the clone job already running for the customer (429). Resume
// polling JobID only when SourceSplatID is the scene you asked to clone.
type CloneInProgressDetails struct {
	JobID         string `json:"jobId"`
	SourceSplatID string `json:"sourceSplatId"`
}

// Error implements error.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "splathost: %d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if len(e.Issues) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(e.Issues, "; "))
	}
	return b.String()
}

// decodeAPIError builds the error of a non-2xx answer. A body that is not the envelope (a
// proxy's HTML page) still gives an error with the status and its text.
func decodeAPIError(status int, header http.Header, body []byte) *APIError {
	e := &APIError{Status: status, RequestID: header.Get("X-Request-Id"), Body: body}
	var env struct {
		Message string   `json:"message"`
		Issues  []string `json:"issues"`
		Code    string   `json:"code"`
	}
	if json.Unmarshal(body, &env) != nil {
		e.Message = http.StatusText(status)
		return e
	}
	e.Message, e.Issues, e.Code = env.Message, env.Issues, env.Code
	switch e.Code {
	case CodeStorageQuotaExceeded:
		e.Storage = &StorageQuotaDetails{}
		_ = json.Unmarshal(body, e.Storage)
	case CodePlanLimit:
		e.PlanLimit = &PlanLimitDetails{}
		_ = json.Unmarshal(body, e.PlanLimit)
	case CodeCloneInProgress:
		e.CloneInProgress = &CloneInProgressDetails{}
		_ = json.Unmarshal(body, e.CloneInProgress)
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// IsCode reports whether err is an answer of the service with the given code, e.g.
// IsCode(err, CodeCustomerNotProvisioned).
func IsCode(err error, code string) bool {
	e, ok := asAPIError(err)
	return ok && e.Code == code
}

// CodeOf returns the code of err's answer, or "" when err is no answer of the service (a
// network error, a cancelled context).
func CodeOf(err error) string {
	if e, ok := asAPIError(err); ok {
		return e.Code
	}
	return ""
}

// IsNotFound reports whether err is a 404 from the service: no such resource for these
// credentials, or (code [CodeCustomerNotProvisioned]) no such customer.
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsUnauthorized reports whether err is a 401 of the credentials (missing, wrong or expired
// key or token). A 401 about the customer (the upload requests' [CodeCustomerNotProvisioned]
// and [CodeCustomerInactive]) is not: the key was right. A 401 without a code (a proxy's, or
// a service older than the codes) counts.
func IsUnauthorized(err error) bool {
	e, ok := asAPIError(err)
	return ok && e.Status == http.StatusUnauthorized && (e.Code == CodeUnauthorized || e.Code == "")
}

// IsCustomerNotProvisioned reports whether err says the integration has no customer of the
// external user id the call named: provision it with [Client.PutCustomer].
func IsCustomerNotProvisioned(err error) bool { return IsCode(err, CodeCustomerNotProvisioned) }

// IsRevoked reports whether err is the 410 of a call made with a revoked integration's keys.
func IsRevoked(err error) bool { return IsCode(err, CodeIntegrationRevoked) }

func statusOf(err error) int {
	if e, ok := asAPIError(err); ok {
		return e.Status
	}
	return 0
}
