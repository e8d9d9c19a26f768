package temporalconn

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// One frontend is dialled as given; a list becomes one target of the list's own resolver, so
// the client balances over every frontend instead of dialling the first alone.
func TestTarget(t *testing.T) {
	host, opts := Target("127.0.0.1:7233")
	require.Equal(t, "127.0.0.1:7233", host)
	require.Empty(t, opts)
	host, opts = Target("127.0.0.1:7233,")
	require.Equal(t, "127.0.0.1:7233", host, "a stray comma leaves one address")
	require.Empty(t, opts)
	host, opts = Target("127.0.0.1:7233,127.0.0.1:7240")
	require.Equal(t, temporalScheme+":///frontends", host)
	require.Len(t, opts, 1, "the resolver holding both addresses")
}
