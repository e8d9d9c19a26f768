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

// TestSealedNamesAKeyNoUploadURLNames: an upload key's sealed copy keeps the customer, the
// ticket and the path under it, in a folder kind no upload is signed for; keys the service
// writes itself and keys outside the layout map to themselves.
func TestSealedNamesAKeyNoUploadURLNames(t *testing.T) {
	for in, want := range map[string]string{
		"i/I/u/O/f/T/scene.ply":                       "i/I/u/O/sealed-f/T/scene.ply",
		"i/I/u/O/l/T/":                                "i/I/u/O/sealed-l/T/",
		"i/I/u/O/l/T/lod0/0_0.webp":                   "i/I/u/O/sealed-l/T/lod0/0_0.webp",
		"i/I/u/O/m/T/thumbnail.jpg":                   "i/I/u/O/sealed-m/T/thumbnail.jpg",
		"i/I/u/O/sealed-f/T/scene.ply":                "i/I/u/O/sealed-f/T/scene.ply",
		"i/I/u/O/clone/J/splat-file/T/scene.ply":      "i/I/u/O/clone/J/splat-file/T/scene.ply",
		"i/I/u/O/rendition/S/scene.sog":               "i/I/u/O/rendition/S/scene.sog",
		"x/I/u/O/splat-file/T/scene.ply":              "x/I/u/O/splat-file/T/scene.ply",
		"i/I/u/O/splat-file":                          "i/I/u/O/splat-file",
		"https://elsewhere.example/i/I/u/O/a/b/c.ply": "https://elsewhere.example/i/I/u/O/a/b/c.ply",
	} {
		require.Equal(t, want, Sealed(in), in)
	}
	require.Equal(t, []string{"i/I/u/O/f/T/a.ply", "i/I/u/O/sealed-f/T/a.ply", "i/I/u/O/clone/J/f/T/a.ply", "i/I/u/O/l/T/", "i/I/u/O/sealed-l/T/"},
		WithSealed("i/I/u/O/f/T/a.ply", "i/I/u/O/clone/J/f/T/a.ply", "i/I/u/O/l/T/"), "each form once, a service key alone")
	kind, id, ok := KindAndID("i/I/u/O/l/T/lod0/0_0.webp")
	require.True(t, ok)
	require.Equal(t, []string{"l", "T"}, []string{kind, id})
	_, _, ok = KindAndID("i/I/u/O/l/T")
	require.False(t, ok, "a folder name alone is no object of a folder")
	for _, k := range []string{"i/I/u/O/l/T/lod0/0_0.webp", Sealed("i/I/u/O/l/T/lod0/0_0.webp")} {
		p, ok := UploadPrefix(k)
		require.True(t, ok, k)
		require.Equal(t, "i/I/u/O/l/T/", p, "both the upload and its sealed copy lead to the ticket")
	}
	for _, k := range []string{"i/I/u/O/clone/J/f/T/scene.ply", "i/I/u/O/rendition/S/scene.sog", "i/I/u/O/sealed-/T/x"} {
		_, ok := UploadPrefix(k)
		require.False(t, ok, k)
	}
}
