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

// TestLanesOf: uploads up to SmallBytes convert in the small lane; larger ones, and a size not
// recorded (0, a rendition started before lanes), in the large lane.
func TestLanesOf(t *testing.T) {
	l := contract.Lanes{SmallBytes: 16 << 20}
	for bytes, want := range map[int64]contract.Lane{1: contract.LaneSmall, 16 << 20: contract.LaneSmall,
		16<<20 + 1: contract.LaneLarge, 1 << 30: contract.LaneLarge, 0: contract.LaneLarge, -1: contract.LaneLarge} {
		require.Equal(t, want, l.Of(bytes), bytes)
	}
	require.Equal(t, contract.LaneLarge, contract.Lanes{}.Of(100), "without a small lane every scene is large")
}
