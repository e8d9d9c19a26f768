package db

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
)

// TestCommitFailure: a commit cut off by the request's deadline changed nothing (503); one whose
// connection broke may have committed (504, outcome unknown); anything else is a 500.
func TestCommitFailure(t *testing.T) {
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		err    error
		status int
	}{
		{"deadline before the commit", expired, sql.ErrTxDone, http.StatusServiceUnavailable},
		{"deadline error itself", expired, context.Canceled, http.StatusServiceUnavailable},
		{"connection lost", context.Background(), io.ErrUnexpectedEOF, http.StatusGatewayTimeout},
		{"other", context.Background(), errors.New("serialization failure"), http.StatusInternalServerError},
	} {
		e := apperr.From(commitFailure(tc.ctx, tc.err))
		require.Equal(t, tc.status, e.Status, tc.name)
	}
}
