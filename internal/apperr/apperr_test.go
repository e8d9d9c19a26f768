package apperr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stretchr/testify/require"
)

func TestBodyCarriesEnvelopeAndExtras(t *testing.T) {
	e := Invalid("invalid body", "limitBytes: must be an integer >= 0").With("code", "X")
	b := e.Body()
	require.Equal(t, "error", b["status"])
	require.Equal(t, "invalid body", b["message"])
	require.Equal(t, []string{"limitBytes: must be an integer >= 0"}, b["issues"])
	require.Equal(t, "X", b["code"])
}

func TestExtraCannotOverrideStatus(t *testing.T) {
	b := New(http.StatusConflict, "busy").With("status", "accepted").Body()
	require.Equal(t, "error", b["status"])
}

func TestInternalHidesCause(t *testing.T) {
	cause := errors.New("pq: password authentication failed for user secret")
	e := From(cause)
	require.Equal(t, http.StatusInternalServerError, e.Status)
	require.NotContains(t, e.Body()["message"], "password")
	require.ErrorIs(t, e, cause)
}

func TestIssuesOnlyOnClientErrors(t *testing.T) {
	e := &Error{Status: 500, Message: "x", Issues: []string{"leak"}}
	_, ok := e.Body()["issues"]
	require.False(t, ok)
}

// A store that cannot be reached or answers too late is a 503 with Retry-After (retry), not a
// 500 (broken): what clients see while Postgres or the object store restarts.
func TestUnreachableStoreIsUnavailable(t *testing.T) {
	for name, cause := range map[string]error{
		"connection refused":  fmt.Errorf("dial: %w", syscall.ECONNREFUSED),
		"postgres shutdown":   &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		"postgres connection": &pgconn.PgError{Code: "08006"},
		"deadline":            fmt.Errorf("put object: %w", context.DeadlineExceeded),
		"network":             &net.OpError{Op: "read", Err: errors.New("reset")},
		"pgx closed":          errors.New("conn closed"),
		// What a multi-host URL with target_session_attrs=read-write gives while no server
		// takes writes (the Postgres primary lost, the standby not yet promoted).
		"no writable server": fmt.Errorf("failed to connect to `user=postgres database=splathost`: %w", errors.Join(
			fmt.Errorf("127.0.0.1:5001 (127.0.0.1): ValidateConnect failed: %w", pgconn.ErrReadOnlyConnection),
			fmt.Errorf("127.0.0.1:5002 (127.0.0.1): ValidateConnect failed: %w", pgconn.ErrReadOnlyConnection))),
	} {
		e := From(cause)
		require.Equal(t, http.StatusServiceUnavailable, e.Status, name)
		require.Equal(t, UnavailableRetryAfter, e.RetryAfter, name)
		require.Equal(t, "a store this request needs is unavailable or too slow; the request changed nothing, retry", e.Body()["message"], name)
		require.ErrorIs(t, e, cause, name)
	}
	for name, cause := range map[string]error{
		"unique violation": &pgconn.PgError{Code: "23505"},
		"plain":            errors.New("nil pointer"),
		"cancelled":        context.Canceled,
	} {
		require.Equal(t, http.StatusInternalServerError, From(cause).Status, name)
		require.Zero(t, From(cause).RetryAfter, name)
	}
}

// Every envelope has a code: the error's own, else its status's; a 4xx or 5xx the table does
// not name still gets one, so no answer can lack it.
func TestEveryEnvelopeHasACode(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		code string
	}{
		{Invalid("bad body", "x: required"), CodeValidation},
		{Unauthorized("invalid credentials"), CodeUnauthorized},
		{Forbidden("no"), CodeForbidden},
		{NotFound("scene not found"), CodeNotFound},
		{Conflict("busy"), CodeConflict},
		{Gone("integration revoked"), CodeIntegrationRevoked},
		{New(http.StatusRequestEntityTooLarge, "too big"), CodePayloadTooLarge},
		{New(http.StatusTooManyRequests, "slow down"), CodeRateLimited},
		{New(http.StatusTeapot, "odd"), CodeClientError},
		{Internal(errors.New("boom")), CodeInternal},
		{New(http.StatusNotImplemented, "odd"), CodeInternal},
		{Unavailable(errors.New("down")), CodeUnavailable},
		{New(http.StatusBadGateway, "no replica"), CodeUnavailable},
		{OutcomeUnknown(errors.New("lost")), CodeOutcomeUnknown},
		{Conflict("room full").With("code", "ROOM_FULL"), "ROOM_FULL"},
		{Conflict("empty code").With("code", ""), CodeConflict},
		{CustomerNotProvisioned(http.StatusUnauthorized), CodeCustomerNotProvisioned},
		{CustomerInactive(http.StatusForbidden, "inactive"), CodeCustomerInactive},
	} {
		require.Equal(t, tc.code, tc.err.Code(), tc.err.Error())
		require.Equal(t, tc.code, tc.err.Body()["code"], tc.err.Error())
	}
	for status := 400; status < 600; status++ {
		require.Contains(t, StatusCodes(), StatusCode(status), status)
	}
}

// A customer never provisioned answers the route's status with its own code, so it is told
// from a wrong key (401 UNAUTHORIZED) and a missing scene (404 NOT_FOUND).
func TestCustomerCodesKeepTheRouteStatus(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound} {
		e := CustomerNotProvisioned(status)
		require.Equal(t, status, e.Status)
		require.Equal(t, CodeCustomerNotProvisioned, e.Body()["code"])
	}
}
