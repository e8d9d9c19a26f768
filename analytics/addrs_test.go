package analytics

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// An address list without any address is a configuration error, said before any dial.
func TestOpenWithoutAddress(t *testing.T) {
	_, err := Open(context.Background(), " , ", "splathost")
	require.ErrorContains(t, err, "no clickhouse address")
}
