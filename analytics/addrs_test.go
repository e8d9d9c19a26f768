package analytics

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// SPLATHOST_CLICKHOUSE_ADDR takes one node or a cluster's nodes, separated by commas.
func TestAddrs(t *testing.T) {
	for in, want := range map[string][]string{
		"127.0.0.1:19000":           {"127.0.0.1:19000"},
		"ch-1:9000,ch-2:9000":       {"ch-1:9000", "ch-2:9000"},
		" ch-1:9000 , ,ch-2:9000 ,": {"ch-1:9000", "ch-2:9000"},
		"":                          nil,
		" , ":                       nil,
	} {
		require.Equal(t, want, Addrs(in), "%q", in)
	}
}

// An address list without any address is a configuration error, said before any dial.
func TestOpenWithoutAddress(t *testing.T) {
	_, err := Open(context.Background(), " , ", "splathost")
	require.ErrorContains(t, err, "no clickhouse address")
}
