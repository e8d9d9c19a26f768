package scene

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"github.com/splathost/splathost/internal/plyfile"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
)

// inspectBytes runs the commit's deeper check over a whole file.
func inspectBytes(ext string, b []byte) error {
	return inspect(ext, bytes.NewReader(b), int64(len(b)))
}

// claimPLY returns ply with its vertex count replaced by n.
func claimPLY(t testing.TB, ply []byte, n int64) []byte {
	t.Helper()
	h := bytes.Index(ply, []byte("element vertex "))
	require.GreaterOrEqual(t, h, 0)
	end := h + bytes.IndexByte(ply[h:], '\n')
	return append(append(append([]byte{}, ply[:h]...), fmt.Sprintf("element vertex %d", n)...), ply[end:]...)
}

// TestInspectPLY: the body must hold exactly the records the header claims.
func TestInspectPLY(t *testing.T) {
	ply := fixtures.PLY(100)
	ascii := []byte("ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\nend_header\n0 0 0\n1 1 1\n")
	list := []byte("ply\nformat binary_little_endian 1.0\nelement face 2\nproperty list uchar int i\nend_header\n\x00\x01\x07\x00\x00\x00")
	tests := []struct {
		name string
		data []byte
		want string // "" when accepted
	}{
		{"plain", ply, ""},
		{"compressed", fixtures.CompressedPLY(300), ""},
		{"ascii", ascii, ""},
		{"list", list, ""},
		{"one byte short", ply[:len(ply)-1], "truncated"},
		{"one byte over", append(append([]byte{}, ply...), 0), "1 bytes after the records"},
		{"2^31-1 vertices on a small body", claimPLY(t, fixtures.PLY(80), 1<<31-1), "claims 2147483647 vertices"},
		{"int64 max vertices", claimPLY(t, ply, 1<<63-1), "not a valid PLY file"},
		{"fewer vertices than the body", claimPLY(t, ply, 99), "bytes after the records"},
		{"ascii claiming a billion", bytes.Replace(ascii, []byte("vertex 2"), []byte("vertex 1000000000"), 1), "claims 1000000000 vertices"},
		{"list claiming more", bytes.Replace(list, []byte("face 2"), []byte("face 7"), 1), "claims 7 face records"},
		{"no end_header", []byte("ply\nformat ascii 1.0\nelement vertex 1\n"), "no end_header"},
		{"header only", []byte("ply\nformat binary_little_endian 1.0\nelement vertex 0\nproperty float x\nend_header\n"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { requireInspect(t, ".ply", "not a valid PLY file: ", tc.data, tc.want) })
	}
}

// requireInspect checks inspect accepts data as ext when want is empty, and otherwise refuses it
// with a message under prefix that contains want.
func requireInspect(t *testing.T, ext, prefix string, data []byte, want string) {
	t.Helper()
	err := inspectBytes(ext, data)
	if want == "" {
		require.NoError(t, err)
		return
	}
	require.ErrorContains(t, err, want)
	require.True(t, strings.HasPrefix(err.Error(), prefix), err.Error())
}

// sogWith zips entries (name → bytes), each deflated when deflate is set.
func sogWith(t *testing.T, deflate bool, entries ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e[0], Method: zip.Store}
		if deflate {
			h.Method = zip.Deflate
		}
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write([]byte(e[1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestInspectSOG: entries, sizes, ratio and meta.json are bounded.
func TestInspectSOG(t *testing.T) {
	many := make([][2]string, sogMaxEntries+1)
	for i := range many {
		many[i] = [2]string{fmt.Sprintf("t%d.webp", i), "x"}
	}
	many[0] = [2]string{"meta.json", "{}"}
	// A bomb that lies: its header declares a small meta.json, its stream inflates past it.
	var lie bytes.Buffer
	fw, _ := flate.NewWriter(&lie, flate.BestCompression)
	fw.Write(bytes.Repeat([]byte(" "), 1<<20))
	fw.Close()
	liar := sogWith(t, false, [2]string{"meta.json", "{}"})
	{
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, err := zw.CreateRaw(&zip.FileHeader{Name: "meta.json", Method: zip.Deflate, CompressedSize64: uint64(lie.Len()), UncompressedSize64: uint64(lie.Len()) * 90})
		require.NoError(t, err)
		w.Write(lie.Bytes())
		require.NoError(t, zw.Close())
		liar = b.Bytes()
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"fixture", fixtures.SOG(1000), ""},
		{"deflated entries", sogWith(t, true, [2]string{"meta.json", `{"version":2}`}, [2]string{"means_l.webp", "RIFF"}), ""},
		{"1 GiB bomb", fixtures.SOGBomb(1 << 30), "more than 100 times its size"},
		{"16 MiB bomb", fixtures.SOGBomb(16 << 20), "more than 100 times its size"},
		{"bomb that lies about its size", liar, "does not unpack to its declared size"},
		{"meta.json too big", sogWith(t, false, [2]string{"meta.json", "[" + strings.Repeat("0,", sogMaxMeta/2) + "0]"}), "meta.json has"},
		{"meta.json not JSON", sogWith(t, false, [2]string{"meta.json", "{"}), "meta.json is not JSON"},
		{"no meta.json", sogWith(t, false, [2]string{"means_l.webp", "RIFF"}), "it has no meta.json"},
		{"too many entries", sogWith(t, false, many...), "65 entries, at most 64"},
		{"escaping name", sogWith(t, false, [2]string{"meta.json", "{}"}, [2]string{"../x.webp", "x"}), "not a plain relative path"},
		{"not a zip", append([]byte("PK\x03\x04"), make([]byte, 100)...), "not a readable zip archive"},
		{"truncated", fixtures.SOG(10)[:300], "not a readable zip archive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { requireInspect(t, ".SOG", "not a valid .sog file: ", tc.data, tc.want) })
	}
	require.Less(t, len(fixtures.SOGBomb(1<<30)), 2<<20, "the finding's bomb is about 1 MB")
}

// TestInspectOtherFormats: formats without a deeper check pass inspect untouched.
func TestInspectOtherFormats(t *testing.T) {
	for _, ext := range []string{".splat", ".ksplat", ".webp", ".json", ".jpg", ".png", ".mp3", ".ogg"} {
		require.NoError(t, inspectBytes(ext, []byte("anything")), ext)
	}
}

// FuzzInspect feeds the commit-time checks (sniff, then inspect, as sniffObject runs them)
// any bytes as a .ply or a .sog: they never panic, refuse with a reason under the format's
// prefix, are deterministic, and what they accept keeps the promises the viewers rely on: a
// PLY's records fill its body, a .sog's meta.json is JSON within its bound.
func FuzzInspect(f *testing.F) {
	f.Add(true, fixtures.PLY(3))
	f.Add(true, fixtures.CompressedPLY(3))
	f.Add(true, []byte("ply\nformat ascii 1.0\nelement vertex 1\nproperty list uchar int f\nproperty float x\nend_header\n3 1 2 3 0.5\n"))
	f.Add(true, claimPLY(f, fixtures.PLY(2), 1<<31-1))
	f.Add(false, fixtures.SOG(3))
	f.Add(false, fixtures.SOGBomb(1<<20))
	f.Add(false, []byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, ply bool, data []byte) {
		ext := ".sog"
		if ply {
			ext = ".ply"
		}
		check := func() error {
			if err := sniffBytes(ext, data); err != nil {
				return nil // refused before inspect runs
			}
			return inspectBytes(ext, data)
		}
		err := check()
		if again := check(); (again == nil) != (err == nil) {
			t.Fatal("inspect is not deterministic")
		}
		if err != nil {
			prefix := map[bool]string{true: "not a valid PLY file: ", false: "not a valid .sog file: "}[ply]
			if !strings.HasPrefix(err.Error(), prefix) || len(err.Error()) == len(prefix) {
				t.Fatalf("refusal %q does not say why", err)
			}
			return
		}
		if sniffBytes(ext, data) != nil {
			return
		}
		if ply {
			h, err := plyfile.ReadHeader(bytes.NewReader(data))
			require.NoError(t, err)
			for _, e := range h.Elements {
				if least := int64(len(e.Properties)); least > 0 {
					require.LessOrEqual(t, e.Count, int64(len(data))/least, "element %s claims more records than the file can hold", e.Name)
				}
			}
			return
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err)
		require.LessOrEqual(t, len(zr.File), sogMaxEntries)
		rc, err := zr.Open(sogMeta)
		require.NoError(t, err)
		defer rc.Close()
		text, err := io.ReadAll(io.LimitReader(rc, sogMaxMeta+1))
		require.NoError(t, err)
		require.LessOrEqual(t, len(text), sogMaxMeta)
		require.True(t, json.Valid(text))
	})
}
