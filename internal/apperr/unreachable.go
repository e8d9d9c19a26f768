package apperr

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unreachable reports whether err says a store could not be reached or did not answer in time,
// rather than that the request or the code was wrong: a connection refused, reset or closed by a
// restarting server (Postgres, the object store), a Postgres connection exception or shutdown
// (SQLSTATE class 08, 57P01-57P03), or a deadline that ran out. Such a failure passes once the
// store is back, so the client is told to retry (503), not that the server is broken (500).
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	// pgx reports a use of a connection it closed after a fatal error as "conn closed".
	return strings.Contains(err.Error(), "conn closed")
}
