package objectkeys

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseRoundTrip: every kind of key and folder the builders make parses back into the
// parts it was built from, and String gives the same key again.
func TestParseRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want Key
	}{
		{Customer("I", "O") + "splat-file/T/scene.ply", Key{"I", "O", "splat-file", "T", "scene.ply"}},
		{Folder("I", "O", "splat-lod", "T"), Key{"I", "O", "splat-lod", "T", ""}},
		{Folder("I", "O", "splat-lod", "T") + "lod0/0_0.webp", Key{"I", "O", "splat-lod", "T", "lod0/0_0.webp"}},
		{Folder("I", "O", "splat-lod", "T") + "lod0/", Key{"I", "O", "splat-lod", "T", "lod0/"}},
		{Sealed(Customer("I", "O") + "splat-file/T/scene.ply"), Key{"I", "O", "sealed-splat-file", "T", "scene.ply"}},
		{CloneFolder("I", "O", "J"), Key{"I", "O", KindClone, "J", ""}},
		{CloneFolder("I", "O", "J") + "splat-file/T/scene.ply", Key{"I", "O", KindClone, "J", "splat-file/T/scene.ply"}},
		{RenditionFolder("I", "O", "S"), Key{"I", "O", KindRendition, "S", ""}},
		{RenditionFolder("I", "O", "S") + "scene.sog", Key{"I", "O", KindRendition, "S", "scene.sog"}},
	} {
		got, ok := Parse(tc.key)
		require.True(t, ok, tc.key)
		require.Equal(t, tc.want, got, tc.key)
		require.Equal(t, tc.key, got.String(), tc.key)
		require.Equal(t, tc.key[:len(got.Folder())], got.Folder(), tc.key)
		require.Equal(t, tc.key[len(Customer("I", "O")):], got.Path(), tc.key)
		require.Equal(t, tc.key[len(tc.key)-1] == '/', got.IsFolder(), tc.key)
	}
}

// TestParseRefusesHostileKeys: dot and empty segments, keys outside the layout and too-short
// keys are no keys, wherever the odd part sits; a key under another customer's (or another
// integration's) prefix parses, but BelongsTo refuses it for anyone else.
func TestParseRefusesHostileKeys(t *testing.T) {
	for _, k := range []string{
		"", "i", "i/I/u/O/f/T", "i/I/u/O/f", "i/I/u/O/",
		"x/I/u/O/f/T/a.ply", "i/I/v/O/f/T/a.ply", "/i/I/u/O/f/T/a.ply",
		"i//u/O/f/T/a.ply", "i/I/u//f/T/a.ply", "i/I/u/O//T/a.ply", "i/I/u/O/f//a.ply", "i/I/u/O/f/T//",
		"i/I/u/O/f/T/a//b.ply", "i/../u/O/f/T/a.ply", "i/I/u/../f/T/a.ply", "i/I/u/O/../T/a.ply",
		"i/I/u/O/f/./a.ply", "i/I/u/O/f/T/../../../P/f/T/a.ply", "i/I/u/O/f/T/lod0/./x", "i/I/u/O/f/T/..",
		"../../i/I/u/O/f/T/a.ply", "https://elsewhere.example/i/I/u/O/f/T/a.ply",
	} {
		_, ok := Parse(k)
		require.False(t, ok, k)
	}
	mine, ok := Parse(Customer("I", "O") + "splat-file/T/a.ply")
	require.True(t, ok)
	require.True(t, mine.BelongsTo("I", "O"))
	for _, k := range []string{Customer("I", "P") + "splat-file/T/a.ply", Customer("J", "O") + "splat-file/T/a.ply",
		Customer("I", "O2") + "splat-file/T/a.ply", CloneFolder("I", "P", "J") + "splat-file/T/a.ply"} {
		other, ok := Parse(k)
		require.True(t, ok, k)
		require.False(t, other.BelongsTo("I", "O"), "another customer's or integration's key: %s", k)
	}
}

// TestSourceOfAClonesCopy: a clone's copy keeps its source's kind, folder id and path, so a
// clone of a clone maps to the same place as a clone of the original; a clone folder's own
// stray objects have no source.
func TestSourceOfAClonesCopy(t *testing.T) {
	orig, _ := Parse(Customer("I", "O") + "splat-file/T/scene.ply")
	copied, _ := Parse(CloneFolder("I", "P", "J") + orig.Path())
	src, ok := copied.Source()
	require.True(t, ok)
	require.Equal(t, Key{"I", "P", "splat-file", "T", "scene.ply"}, src)
	require.Equal(t, orig.Path(), src.Path())
	self, ok := orig.Source()
	require.True(t, ok)
	require.Equal(t, orig, self)
	folder, _ := Parse(CloneFolder("I", "P", "J") + "splat-lod/T/")
	src, ok = folder.Source()
	require.True(t, ok)
	require.Equal(t, "splat-lod/T/", src.Path())
	for _, k := range []string{CloneFolder("I", "P", "J"), CloneFolder("I", "P", "J") + "stray.bin", CloneFolder("I", "P", "J") + "f/T"} {
		p, ok := Parse(k)
		require.True(t, ok, k)
		_, ok = p.Source()
		require.False(t, ok, k)
	}
}
