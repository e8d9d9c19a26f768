package activities

import (
	"errors"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/workflows/contract"
)

// clientErrorOr returns err as ClientError when it is an *apperr.Error a client should see
// (a 4xx), and unchanged otherwise, so that infrastructure failures are retried.
func clientErrorOr(err error) error {
	var e *apperr.Error
	if errors.As(err, &e) && e.Status < 500 {
		return clientError(e)
	}
	return err
}

// clientError wraps a client's error envelope as the contract's non-retryable ErrClient
// failure, which the API that started the workflow turns back into the same envelope.
func clientError(e *apperr.Error) error {
	return contract.ClientError(contract.ClientErrorDetails{Status: e.Status, Message: e.Message, Issues: e.Issues, Extra: e.Extra})
}
