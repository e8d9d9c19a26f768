package idempotency

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/ids"
)

func TestKeyProblem(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`"quoted-sf-string"`, true},
		{"~!@#$%^&*()_+{}|:<>?", true},
		{strings.Repeat("k", 255), true},
		{"", false},
		{strings.Repeat("k", 256), false},
		{"with space", false},
		{"tab\there", false},
		{"nul\x00byte", false},
		{"del\x7f", false},
		{"caf\u00e9", false},
		{"line\nbreak", false},
	} {
		require.Equal(t, tc.ok, KeyProblem(tc.key) == "", "%q: %s", tc.key, KeyProblem(tc.key))
	}
}

func TestScopeDigestSeparatesFields(t *testing.T) {
	a := Scope{IntegrationID: "i", ExternalUserID: "ab", Method: "POST", Path: "/p", Key: "k"}
	b := Scope{IntegrationID: "i", ExternalUserID: "a", Method: "bPOST", Path: "/p", Key: "k"}
	require.NotEqual(t, a.digest(), b.digest())
	require.Equal(t, a.digest(), a.digest())
	c := a
	c.ExternalUserID = ""
	require.NotEqual(t, a.digest(), c.digest(), "no EU is another scope than an EU")
}

func TestFenceRoundTrip(t *testing.T) {
	c := Claim{scope: Scope{IntegrationID: "i", Key: "k"}.digest(), lease: "0123456789abcdef01234567", created: time.Unix(1, 5)}
	f, ok := parseFence(c.Fence())
	require.True(t, ok)
	require.Equal(t, c.scope, f.scope)
	require.Equal(t, c.lease, f.lease)
	require.Equal(t, c.created.UnixNano(), f.created)
	for _, bad := range []string{"", "nodot", ".lease.1", "zz.lease.1", "ab..1", "ab.lease", "ab.lease.x", "ab.lease.1.2"} {
		_, ok := parseFence(bad)
		require.False(t, ok, bad)
	}
}

// TestStableID: every retry of one keyed request (same scope and first claim, any lease) gets
// the same id; the same key after its 24 h (a new first claim) and another key get others.
func TestStableID(t *testing.T) {
	id := func(c Claim) string {
		s, ok := StableID(WithFence(context.Background(), c.Fence()))
		require.True(t, ok)
		require.True(t, ids.Valid(s), s)
		return s
	}
	a := Claim{scope: Scope{IntegrationID: "i", Key: "k"}.digest(), lease: "l1", created: time.Unix(100, 0)}
	retry := a
	retry.lease = "l2"
	later := a
	later.created = a.created.Add(Retention)
	other := a
	other.scope = Scope{IntegrationID: "i", Key: "k2"}.digest()
	require.Equal(t, id(a), id(retry))
	require.NotEqual(t, id(a), id(later))
	require.NotEqual(t, id(a), id(other))
	_, ok := StableID(context.Background())
	require.False(t, ok)
}
