package apperr

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// Unreachable reports whether err says a store could not be reached or did not answer in time,
// rather than that the request or the code was wrong: a connection refused, reset or closed by a
// restarting server (Postgres, the object store), a Postgres connection exception or shutdown
// (SQLSTATE class 08, 57P01-57P03), no server of a multi-host URL taking writes (a failover in
// progress), or a deadline that ran out. Such a failure passes once the
// store is back, so the client is told to retry (503), not that the server is broken (500).
//
// Postgres errors are recognised by the methods pgconn's errors have (SQLState, SafeToRetry),
// not by importing pgconn: the workflows import this package and must not depend on pgx.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var safe interface{ SafeToRetry() bool }
	if errors.As(err, &safe) && safe.SafeToRetry() {
		return true // pgx: the statement never reached the server
	}
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) {
		code := pgErr.SQLState()
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true // a dial, read or write on the store's connection failed or timed out
	}
	// pgx reports a use of a connection it closed after a fatal error as "conn closed"; and a
	// connect with target_session_attrs=read-write that found every server read-only (pgconn's
	// ErrReadOnlyConnection) as "read only connection": a failover between the primary's loss
	// and the standby's promotion, over once a server takes writes again.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "read only connection")
}
