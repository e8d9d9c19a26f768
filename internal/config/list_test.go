package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// SPLATHOST_CLICKHOUSE_ADDR takes one node or a cluster's nodes, separated by commas; the other
// list settings read the same way.
func TestList(t *testing.T) {
	for in, want := range map[string][]string{
		"127.0.0.1:19000":           {"127.0.0.1:19000"},
		"ch-1:9000,ch-2:9000":       {"ch-1:9000", "ch-2:9000"},
		" ch-1:9000 , ,ch-2:9000 ,": {"ch-1:9000", "ch-2:9000"},
		"":                          nil,
		" , ":                       nil,
	} {
		require.Equal(t, want, List(in), "%q", in)
	}
}
