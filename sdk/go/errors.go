package splathost

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Error codes the service names in its error envelopes (spec, Errors).
const (
	// CodeStorageQuotaExceeded is the 413 of a storage cap; see [StorageQuotaDetails].
	CodeStorageQuotaExceeded = "STORAGE_QUOTA_EXCEEDED"
	// CodePlanLimit is the 403 of a plan or scene-cap check; see [PlanLimitDetails].
	CodePlanLimit = "plan_limit"
	// CodeCloneInProgress is the 429 of a second clone; see [CloneInProgressDetails].
	CodeCloneInProgress = "CLONE_IN_PROGRESS"
	// CodeSourceFilesMissing is the 409 of a clone whose source lost its files.
	CodeSourceFilesMissing = "SOURCE_FILES_MISSING"
	// CodeRateLimited is the 429 of a rate limit: nothing was done, and the request may be sent
	// again after the Retry-After seconds, which the client does on its own (any method).
	CodeRateLimited = "RATE_LIMITED"
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

// IsNotFound reports whether err is a 404 from the service.
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsUnauthorized reports whether err is a 401 from the service (missing or wrong credentials).
func IsUnauthorized(err error) bool { return statusOf(err) == http.StatusUnauthorized }

func statusOf(err error) int {
	if e, ok := asAPIError(err); ok {
		return e.Status
	}
	return 0
}
