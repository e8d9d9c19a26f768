package contract_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/workflows/contract"
)

// TestRenditionFormat: single files of the converter's formats get a rendition, whatever the
// case or a query string; .sog files and LOD folders do not. (That "file" and "lod" are ent's
// spellings is checked in activities, which may import ent.)
func TestRenditionFormat(t *testing.T) {
	for u, want := range map[string]string{"https://s/b/k/scene.PLY": ".ply", "https://s/b/k/a.splat?x=1": ".splat", "k/a.ksplat#f": ".ksplat"} {
		got, ok := contract.RenditionFormat("file", u)
		require.True(t, ok, u)
		require.Equal(t, want, got)
	}
	for _, c := range [][2]string{{"file", "k/a.sog"}, {"file", "k/a"}, {"lod", "k/lod-meta.json"}, {"lod", "k/a.ply"}} {
		_, ok := contract.RenditionFormat(c[0], c[1])
		require.False(t, ok, c)
	}
}
