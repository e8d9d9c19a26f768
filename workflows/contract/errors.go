package contract

import (
	"errors"

	"go.temporal.io/sdk/temporal"
)

// ErrBadInput is the application error type of input an activity can never process; it is
// returned non-retryable, so a workflow fails fast instead of retrying forever.
const ErrBadInput = "BadInput"

// ErrClient is the application error type of a failure that is the client's answer (an
// apperr envelope: 404, 409 SOURCE_FILES_MISSING, 413 STORAGE_QUOTA_EXCEEDED, ...). It is
// never retried, and the API that started the workflow turns it back into the same envelope.
const ErrClient = "ClientError"

// ClientErrorDetails carries a client's error envelope (an apperr.Error's client-facing fields)
// through Temporal: the details of an ErrClient application error. It is plain data so that the
// contract stays a leaf; the activities build it from an apperr.Error and the services turn it
// back into one.
type ClientErrorDetails struct {
	Status  int            `json:"status"`
	Message string         `json:"message"`
	Issues  []string       `json:"issues,omitempty"`
	Extra   map[string]any `json:"extra,omitempty"`
}

// ClientError wraps a client-facing error as a non-retryable ErrClient application error.
func ClientError(d ClientErrorDetails) error {
	return temporal.NewNonRetryableApplicationError(d.Message, ErrClient, nil, d)
}

// ClientErrorOf finds the client's envelope in a workflow or activity failure (however deeply
// Temporal wrapped it), or returns nil when the failure is not one.
func ClientErrorOf(err error) *ClientErrorDetails {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrClient {
		return nil
	}
	var d ClientErrorDetails
	if !ae.HasDetails() || ae.Details(&d) != nil || d.Status == 0 {
		return nil
	}
	return &d
}
