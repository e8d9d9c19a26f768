package media

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"github.com/splathost/splathost/internal/plyfile"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// poison sets property prop of the Gaussians idx of the Plain PLY data to v.
func poison(t *testing.T, data []byte, prop string, v float32, idx ...int) []byte {
	t.Helper()
	h, err := plyfile.ReadHeader(bytes.NewReader(data))
	require.NoError(t, err)
	off := h.Offset(prop)
	require.GreaterOrEqual(t, off, 0, prop)
	out := append([]byte{}, data...)
	for _, i := range idx {
		binary.LittleEndian.PutUint32(out[h.HeaderLen+int64(i*h.Stride+off):], math.Float32bits(v))
	}
	return out
}

// TestDropNonFinite: every Gaussian with a NaN or ±Inf anywhere goes, the rest are kept byte
// for byte; a scene of nothing else is ErrNoFiniteGaussians.
func TestDropNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	data := stand.PLY(50)
	for _, c := range []struct{ prop string }{{"x"}, {"scale_1"}, {"rot_3"}, {"opacity"}, {"f_dc_2"}} {
		data = poison(t, data, c.prop, nan, 3)
	}
	data = poison(t, data, "y", inf, 7)
	data = poison(t, data, "scale_0", -inf, 49)
	src := writeFile(t, "scene.ply", data)
	dst := filepath.Join(t.TempDir(), "finite.ply")
	kept, dropped, err := DropNonFinite(src, dst)
	require.NoError(t, err)
	require.Equal(t, 47, kept)
	require.Equal(t, 3, dropped)
	h, err := StatPLY(dst)
	require.NoError(t, err)
	require.EqualValues(t, 47, h.Vertices)
	require.True(t, h.Plain)
	p, err := openPlain(dst)
	require.NoError(t, err)
	defer p.close()
	require.NoError(t, p.each(p.checkFinite), "no non-finite value is left")

	// Nothing to drop: nothing written.
	clean := filepath.Join(t.TempDir(), "clean.ply")
	kept, dropped, err = DropNonFinite(writeFile(t, "ok.ply", stand.PLY(20)), clean)
	require.NoError(t, err)
	require.Equal(t, 20, kept)
	require.Zero(t, dropped)
	_, err = os.Stat(clean)
	require.ErrorIs(t, err, os.ErrNotExist)

	// Nothing left.
	all := make([]int, 20)
	for i := range all {
		all[i] = i
	}
	_, _, err = DropNonFinite(writeFile(t, "nan.ply", poison(t, stand.PLY(20), "opacity", nan, all...)), filepath.Join(t.TempDir(), "x.ply"))
	require.ErrorIs(t, err, ErrNoFiniteGaussians)
	require.ErrorContains(t, err, "all 20 hold NaN or infinite values")
}

// TestPipelineDropsNonFiniteGaussians: the rendition counts only the finite Gaussians, and a
// scene of only NaN and ±Inf fails with a message that says so.
func TestPipelineDropsNonFiniteGaussians(t *testing.T) {
	tr := converter(t)
	nan := float32(math.NaN())
	src := writeFile(t, "some.ply", poison(t, stand.PLY(200), "x", nan, 0, 10, 199))
	r, err := Pipeline{Transform: tr, LODMin: 1_000_000}.Run(context.Background(), src, ".ply", t.TempDir(), nil, nil)
	require.NoError(t, err)
	require.EqualValues(t, 197, r.Gaussians)

	all := make([]int, 200)
	for i := range all {
		all[i] = i
	}
	data := poison(t, poison(t, stand.PLY(200), "x", nan, all[:100]...), "scale_2", float32(math.Inf(-1)), all[100:]...)
	_, err = Pipeline{Transform: tr, LODMin: 1_000_000}.Run(context.Background(), writeFile(t, "nan.ply", data), ".ply", t.TempDir(), nil, nil)
	var ie *InputError
	require.True(t, errors.As(err, &ie), "%T %v", err, err)
	require.ErrorContains(t, err, "no finite Gaussians")
}

// TestTailNamesTheCause: the converter's failure ends with footers and a stack; the message is
// its error line.
func TestTailNamesTheCause(t *testing.T) {
	for name, c := range map[string]struct {
		out  []string
		want string
	}{
		"splat-transform error": {[]string{
			"splat-transform v3.7.0 (0f60b17)",
			"▸ [2/2] Output out.sog",
			"  ✗ Error: readPly: file size 102 does not match header-implied size 122 (truncated or corrupt PLY)",
			"    at readPly (file:///x/cli.mjs:22149:19)",
			"    at async readFile (file:///x/cli.mjs:38995:21)",
			"    at async openInput (file:///x/cli.mjs:52178:30)",
			"    at async main (file:///x/cli.mjs:52218:27)",
			"    at async file:///x/bin/cli.mjs:5:1",
			"  failed in 0.080s",
			"✗ failed in 0.435s  [peak cpu=87.0MB]",
		}, "readPly: file size 102 does not match header-implied size 122 (truncated or corrupt PLY)"},
		"node crash": {[]string{"<--- Last few GCs --->", "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"},
			"FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"},
		"plain last line": {[]string{"▸ [1/2] Input a.ply", "cannot open a.ply"}, "cannot open a.ply"},
		"only footers":    {[]string{"splat-transform v3.7.0 (0f60b17)", "✗ failed in 0.021s  [peak cpu=87.1MB]"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			var b tailBuffer
			for _, l := range c.out {
				b.add(l)
			}
			require.Equal(t, c.want, b.last())
		})
	}
}
