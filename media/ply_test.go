package media_test

import (
	"bytes"
	"fmt"
	"github.com/splathost/splathost/internal/plyfile"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/media"
)

// TestReadPLYHeaderFixtures: the fixtures' training PLYs, both scenes at SH degrees 0 and 3,
// parse as Plain with the trainer's layout.
func TestReadPLYHeaderFixtures(t *testing.T) {
	for _, g := range []fixtures.Gen{ball, stand} {
		for _, sh := range []int{0, 1, 2, 3} {
			t.Run(fmt.Sprintf("%s/sh%d", g.Scene, sh), func(t *testing.T) {
				data := trainingPLY(t, g, 100, sh)
				h, err := plyfile.ReadHeader(bytes.NewReader(data))
				require.NoError(t, err)
				require.True(t, h.Plain, h.NotPlain)
				require.Empty(t, h.NotPlain)
				require.Equal(t, "binary_little_endian", h.Format)
				require.EqualValues(t, 100, h.Vertices)
				require.Equal(t, sh, h.SHDegree)
				require.Equal(t, fixtures.TrainingPLYStride(sh), h.Stride)
				require.Len(t, h.Properties, h.Stride/4)
				end := bytes.Index(data, []byte("end_header\n")) + len("end_header\n")
				require.EqualValues(t, end, h.HeaderLen)
				require.Len(t, data, end+100*h.Stride)

				// The trainer's order: normals after the position, f_rest between f_dc and
				// opacity, channel-major.
				require.Equal(t, 12, h.Offset("nx"))
				require.Equal(t, 24, h.Offset("f_dc_0"))
				require.Equal(t, 36+4*fixtures.SHRestCount(sh), h.Offset("opacity"))
				require.Equal(t, h.Stride-4, h.Offset("rot_3"))
				require.Equal(t, -1, h.Offset("f_rest_45"))
				for _, p := range h.Properties {
					require.Equal(t, "float", p.Type)
					require.False(t, p.List)
				}
			})
		}
	}
	h, err := plyfile.ReadHeader(bytes.NewReader(fixtures.PLY(10)))
	require.NoError(t, err)
	require.True(t, h.Plain)
	require.Equal(t, 68, h.Stride, "fixtures.PLY is the degree-0 training PLY")
}

// TestReadPLYHeaderNotPlain: PLYs that are not the trainer's layout parse, as not Plain, saying
// why: the caller converts them with splat-transform.
func TestReadPLYHeaderNotPlain(t *testing.T) {
	h, err := plyfile.ReadHeader(bytes.NewReader(fixtures.CompressedPLY(1000)))
	require.NoError(t, err)
	require.False(t, h.Plain)
	require.Contains(t, h.NotPlain, "chunk vertex")
	require.EqualValues(t, 1000, h.Vertices)
	require.Equal(t, 16, h.Stride, "four packed uints")
	require.Equal(t, "uint", h.Properties[0].Type)
	require.Len(t, h.Elements, 2)
	require.EqualValues(t, 4, h.Elements[0].Count)

	plain := string(fixtures.PLY(1))
	header := plain[:strings.Index(plain, "end_header\n")]
	cases := map[string]struct{ header, why string }{
		"ascii":         {strings.Replace(header, "binary_little_endian", "ascii", 1), "format ascii"},
		"big endian":    {strings.Replace(header, "binary_little_endian", "binary_big_endian", 1), "format binary_big_endian"},
		"uchar colour":  {strings.Replace(header, "property float f_dc_0", "property uchar f_dc_0", 1), "f_dc_0 is not a float32"},
		"double":        {strings.Replace(header, "property float x\n", "property double x\n", 1), "x is not a float32"},
		"no rotation":   {strings.Replace(header, "property float rot_3\n", "", 1), "no property rot_3"},
		"partial SH":    {strings.Replace(header, "property float opacity", "property float f_rest_0\nproperty float f_rest_1\nproperty float opacity", 1), "2 f_rest"},
		"SH gap":        {header + "property float f_rest_x\n", "f_rest_x is not an SH coefficient"},
		"list property": {header + "property list uchar int faces\n", "faces is not a float32"},
		"faces too":     {header + "element face 2\nproperty list uchar int vertex_indices\n", "[vertex face]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, err := plyfile.ReadHeader(strings.NewReader(tc.header + "end_header\n"))
			require.NoError(t, err)
			require.False(t, h.Plain)
			require.Contains(t, h.NotPlain, tc.why)
		})
	}
	h, err = plyfile.ReadHeader(strings.NewReader(header + "property list uchar int faces\nproperty float after\nend_header\n"))
	require.NoError(t, err)
	require.Zero(t, h.Stride, "a list makes the records variable")
	require.Equal(t, -1, h.Offset("after"))
	require.Equal(t, 64, h.Offset("rot_3"), "offsets before the list are fixed")
}

// TestReadPLYHeaderRejects: what is not a PLY header, or a malformed or hostile one, is a clear
// error.
func TestReadPLYHeaderRejects(t *testing.T) {
	ok := "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\n"
	cases := map[string]struct{ in, want string }{
		"empty":              {"", "not a PLY"},
		"not ply":            {"PK\x03\x04...", "not a PLY"},
		"no end_header":      {ok, "ends inside the header"},
		"endless header":     {ok + strings.Repeat("comment padding padding padding\n", 3000), "no end_header in the first 64 KiB"},
		"endless line":       {"ply\n" + strings.Repeat("x", 70000), "no end_header in the first 64 KiB"},
		"no format":          {"ply\nelement vertex 1\nproperty float x\nend_header\n", "no format"},
		"two formats":        {"ply\nformat ascii 1.0\nformat ascii 1.0\nend_header\n", "bad format"},
		"unknown format":     {"ply\nformat binary_middle_endian 1.0\nend_header\n", "unknown format"},
		"negative count":     {"ply\nformat ascii 1.0\nelement vertex -5\nend_header\n", "bad count"},
		"count overflow":     {"ply\nformat ascii 1.0\nelement vertex 99999999999999999999\nend_header\n", "bad count"},
		"claims a petabyte":  {ok + "element face 4611686018427387904\nproperty float a\nend_header\n", "more than any scene"},
		"claims 2^61 floats": {strings.Replace(ok, "vertex 1", "vertex 2305843009213693952", 1) + "end_header\n", "more than any scene"},
		"orphan property":    {"ply\nformat ascii 1.0\nproperty float x\nend_header\n", "before any element"},
		"unknown type":       {ok + "property float128 y\nend_header\n", "unknown type"},
		"bad list":           {ok + "property list uchar quad y\nend_header\n", "unknown types"},
		"short property":     {ok + "property float\nend_header\n", "bad property"},
		"twice":              {ok + "property float x\nend_header\n", "property x twice"},
		"element twice":      {ok + "element vertex 2\nend_header\n", "element vertex declared twice"},
		"garbage line":       {ok + "hello world\nend_header\n", "unexpected header line"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := plyfile.ReadHeader(strings.NewReader(tc.in))
			require.ErrorContains(t, err, tc.want)
		})
	}
	// Comments, blank lines and CRLF line ends are fine.
	h, err := plyfile.ReadHeader(strings.NewReader(strings.ReplaceAll("ply\r\ncomment made by hand\r\n\r\n"+ok[4:]+"end_header\n", "\n", "\r\n")))
	require.NoError(t, err)
	require.EqualValues(t, 1, h.Vertices)
	require.Equal(t, 4, h.Stride)
}

// TestStatPLY: a file must hold every record its header claims; a hostile count is an error
// before anything is allocated from it.
func TestStatPLY(t *testing.T) {
	data := fixtures.PLY(50)
	h, err := media.StatPLY(writeFile(t, "ok.ply", data))
	require.NoError(t, err)
	require.EqualValues(t, 50, h.Vertices)

	_, err = media.StatPLY(writeFile(t, "short.ply", data[:len(data)-1]))
	require.ErrorContains(t, err, "truncated")

	// Bytes past the records mean the header lies about the layout.
	_, err = media.StatPLY(writeFile(t, "long.ply", append(append([]byte{}, data...), 0, 0)))
	require.ErrorContains(t, err, "2 bytes after the records")

	huge := bytes.Replace(data, []byte("element vertex 50\n"), []byte("element vertex 2147483648\n"), 1)
	_, err = media.StatPLY(writeFile(t, "huge.ply", huge))
	require.ErrorContains(t, err, "claims 2147483648 vertices")

	_, err = media.StatPLY(filepath.Join(t.TempDir(), "nothing.ply"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// FuzzReadPLYHeader: any bytes give a header or an error, never a panic, and a header accepted
// is consistent with the bytes it was read from.
func FuzzReadPLYHeader(f *testing.F) {
	f.Add(fixtures.PLY(2))
	f.Add(trainingPLY(f, stand, 2, 3))
	f.Add(fixtures.CompressedPLY(3))
	f.Add([]byte("ply\nformat ascii 1.0\nelement vertex 1\nproperty list uchar int f\nproperty float x\nend_header\n"))
	f.Add([]byte("ply\r\nformat binary_big_endian 1.0\r\nelement vertex 2147483648\r\nproperty double x\r\nend_header\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := plyfile.ReadHeader(bytes.NewReader(data))
		if err != nil {
			return
		}
		require.LessOrEqual(t, h.HeaderLen, int64(len(data)))
		require.LessOrEqual(t, h.HeaderLen, int64(plyfile.MaxHeaderBytes))
		header := strings.TrimRight(string(data[:h.HeaderLen]), "\r\n")
		require.True(t, strings.HasSuffix(header, "\nend_header"), "the header ends at end_header")
		require.GreaterOrEqual(t, h.Vertices, int64(0))
		if h.Plain {
			require.Empty(t, h.NotPlain)
			require.Equal(t, 4*len(h.Properties), h.Stride)
			require.GreaterOrEqual(t, h.Offset("rot_3"), 0)
			require.Contains(t, []int{0, 1, 2, 3}, h.SHDegree)
		} else {
			require.NotEmpty(t, h.NotPlain)
		}
		_ = h.CheckSize(int64(len(data)))
	})
}
