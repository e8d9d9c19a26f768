package objectstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCopySource(t *testing.T) {
	require.Equal(t, "b/i/x/a%20b%2Bc.ply", CopySource("b", "i/x/a b+c.ply"))
}
