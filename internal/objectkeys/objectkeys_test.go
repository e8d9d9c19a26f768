package objectkeys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLayout: the layout every writer and every tenancy check relies on.
func TestLayout(t *testing.T) {
	require.Equal(t, "i/int1/", Integration("int1"))
	require.Equal(t, "i/int1/u/rec1/", Customer("int1", "rec1"))
	f := Folder("int1", "rec1", KindRendition, "sc1")
	require.Equal(t, "i/int1/u/rec1/rendition/sc1/", f)
	require.True(t, strings.HasPrefix(f, Customer("int1", "rec1")))
	require.False(t, strings.HasPrefix(Folder("int1", "rec10", KindClone, "j"), Customer("int1", "rec1")),
		"one customer's prefix never covers another's")
}

func TestCopySource(t *testing.T) {
	require.Equal(t, "b/i/x/a%20b%2Bc.ply", CopySource("b", "i/x/a b+c.ply"))
}
