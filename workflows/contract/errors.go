package contract

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/internal/apperr"
)

// ErrBadInput is the application error type of input an activity can never process; it is
// returned non-retryable, so a workflow fails fast instead of retrying forever.
const ErrBadInput = "BadInput"

// ErrClient is the application error type of a failure that is the client's answer (an
// apperr envelope: 404, 409 SOURCE_FILES_MISSING, 413 STORAGE_QUOTA_EXCEEDED, ...). It is
// never retried, and the API that started the workflow turns it back into the same envelope.
const ErrClient = "ClientError"

// ClientErrorDetails carries an apperr.Error through Temporal (the details of an ErrClient
// application error).
type ClientErrorDetails struct {
	Status  int            `json:"status"`
	Message string         `json:"message"`
	Issues  []string       `json:"issues,omitempty"`
	Extra   map[string]any `json:"extra,omitempty"`
}

// ClientError wraps a client-facing error as a non-retryable ErrClient application error.
func ClientError(e *apperr.Error) error {
	return temporal.NewNonRetryableApplicationError(e.Message, ErrClient, nil,
		ClientErrorDetails{Status: e.Status, Message: e.Message, Issues: e.Issues, Extra: e.Extra})
}

// ClientErrorOf finds the client's envelope in a workflow or activity failure (however deeply
// Temporal wrapped it), or returns nil when the failure is not one.
func ClientErrorOf(err error) *apperr.Error {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrClient {
		return nil
	}
	var d ClientErrorDetails
	if !ae.HasDetails() || ae.Details(&d) != nil || d.Status == 0 {
		return nil
	}
	return &apperr.Error{Status: d.Status, Message: d.Message, Issues: d.Issues, Extra: d.Extra}
}
