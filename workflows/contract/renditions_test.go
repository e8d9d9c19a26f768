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

// TestPosterFormat: a .sog file and a LOD folder get a poster alone, and only while the scene
// has no image; the converter's formats get their rendition whatever the image.
func TestPosterFormat(t *testing.T) {
	for _, c := range []struct{ typ, u, want string }{{"file", "k/a.SOG?x=1", ".sog"}, {"lod", "k/lod-meta.json", "lod"}} {
		got, ok := contract.PosterFormat(c.typ, c.u)
		require.True(t, ok, c)
		require.Equal(t, c.want, got)
		require.True(t, contract.Processed(c.typ, c.u, false), c)
		require.False(t, contract.Processed(c.typ, c.u, true), "%v with an image: nothing to do", c)
	}
	for _, c := range [][2]string{{"file", "k/a.ply"}, {"file", "k/a"}, {"file", "k/a.sog.zip"}} {
		_, ok := contract.PosterFormat(c[0], c[1])
		require.False(t, ok, c)
	}
	require.True(t, contract.Processed("file", "k/a.ply", true), "a rendition is built whatever the image")
	require.False(t, contract.Processed("file", "k/a.bin", false))
}
