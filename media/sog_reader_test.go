package media

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteSOGPLYDecodesAsSplatTransform: a SOG the pinned splat-transform wrote (its Morton
// order, its k-means codebooks) decodes, Gaussian by Gaussian, to what splat-transform's own
// reader makes of it, so the poster draws what the viewers decode.
func TestWriteSOGPLYDecodesAsSplatTransform(t *testing.T) {
	tr := converter(t)
	var b []byte
	{
		var buf bytes.Buffer
		require.NoError(t, stand.WriteTrainingPLY(&buf, 4000, 0))
		b = buf.Bytes()
	}
	dir := t.TempDir()
	src := writeFile(t, "scan.ply", b)
	sog := filepath.Join(dir, "scene.sog")
	require.NoError(t, tr.Run(context.Background(), nil, src, sog))
	theirs := filepath.Join(dir, "theirs.ply")
	require.NoError(t, tr.Run(context.Background(), nil, sog, theirs))

	files, closeZip, err := OpenSOGZip(sog)
	require.NoError(t, err)
	defer closeZip()
	ours := filepath.Join(dir, "ours.ply")
	n, err := WriteSOGPLY(ours, []SOGPart{{Files: files, Count: -1}})
	require.NoError(t, err)
	require.EqualValues(t, 4000, n)

	a, err := openPlain(ours)
	require.NoError(t, err)
	defer a.close()
	o, err := openPlain(theirs)
	require.NoError(t, err)
	defer o.close()
	require.Equal(t, o.n, a.n)
	var want [][]float64
	require.NoError(t, o.each(func(i int, rec []byte) error {
		want = append(want, record(&o.l, rec))
		return nil
	}))
	require.NoError(t, a.each(func(i int, rec []byte) error {
		got := record(&a.l, rec)
		for k := range got {
			require.InDelta(t, want[i][k], got[k], 1e-4+1e-5*abs(want[i][k]), "Gaussian %d value %d", i, k)
		}
		return nil
	}))
}

// record is a Gaussian's position, colour, opacity, scales and rotation (w x y z).
func record(l *layout, rec []byte) []float64 {
	var out []float64
	for _, off := range append(append(append(append(l.pos[:], l.dc[:]...), l.opacity), l.scale[:]...), l.rot[:]...) {
		out = append(out, f32(rec, off))
	}
	return out
}

func abs(v float64) float64 { return max(v, -v) }
