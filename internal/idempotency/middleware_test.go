package idempotency

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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

func TestCovers(t *testing.T) {
	m := New(nil, nil, []Route{{"POST", "/api/v1/splats"}, {"POST", "/api/v1/splats/*/clone"}, {"DELETE", "/api/v1/external-user"}})
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/api/v1/splats", true},
		{"POST", "/API/v1/Splats", true},
		{"GET", "/api/v1/splats", false},
		{"POST", "/api/v1/splats/abc/clone", true},
		{"POST", "/api/v1/splats//clone", false},
		{"POST", "/api/v1/splats/abc/clone/job", false},
		{"POST", "/api/v1/splats/abc", false},
		{"DELETE", "/api/v1/external-user", true},
		{"PUT", "/api/v1/external-user", false},
		{"DELETE", "/api/v1/external-user/usage", false},
	} {
		require.Equal(t, tc.want, m.covers(tc.method, tc.path), "%s %s", tc.method, tc.path)
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
