package gateway

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCovers(t *testing.T) {
	m := newKeyMiddleware(nil, nil, []IdempotentRoute{{"POST", "/api/v1/splats"}, {"POST", "/api/v1/splats/*/clone"}, {"DELETE", "/api/v1/external-user"}})
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
