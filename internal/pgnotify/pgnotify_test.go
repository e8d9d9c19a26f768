package pgnotify

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The statement's parameters are the channel, the integration and the ids, in that order.
func TestScenesChangedArgs(t *testing.T) {
	q, args := ScenesChanged("int1", []string{"a", "b"})
	require.Contains(t, q, "pg_notify($1, $2::text || ':' || id)")
	require.Equal(t, []any{"splathost_scenes", "int1", []string{"a", "b"}}, args)
}
