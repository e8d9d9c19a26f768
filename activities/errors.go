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
		return contract.ClientError(e)
	}
	return err
}
