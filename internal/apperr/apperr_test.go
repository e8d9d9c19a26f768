package apperr

import (
	"errors"
	"net/http"
	"testing"

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
