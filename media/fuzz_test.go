package media_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/media"
)

// FuzzScene: Decimate and RenderPoster read whole files; whatever the bytes (hostile counts,
// huge or denormal scales, zero quaternions, a camera inside a Gaussian), they give a result
// or an error, never a panic, and a result is sound.
func FuzzScene(f *testing.F) {
	f.Add(fixtures.PLY(3), 2)
	f.Add(trainingPLY(f, stand, 4, 1), 1)
	f.Add(fixtures.CompressedPLY(2), 1)
	hostile := fixtures.PLY(3)
	s := decode(f, hostile)
	s.set(f, 0, "scale_0", 80)    // finite, but exp of it fills any frame
	s.set(f, 1, "rot_0", 0)       // a zero quaternion
	s.set(f, 1, "rot_1", 0)       //
	s.set(f, 1, "rot_2", 0)       //
	s.set(f, 1, "rot_3", 0)       //
	s.set(f, 2, "opacity", -1e30) // invisible
	f.Add(hostile, 2)
	f.Add(append(fixtures.PLY(2), 0, 0, 0), 5)
	dir := f.TempDir() // one for all inputs: a fresh one each costs more than the input
	f.Fuzz(func(t *testing.T, data []byte, keep int) {
		src := filepath.Join(dir, "in.ply")
		require.NoError(t, os.WriteFile(src, data, 0o644))
		if img, err := media.RenderPoster(src, media.PosterOptions{Width: 32, Height: 18}); err == nil {
			require.NotEmpty(t, img)
		}
		dst := filepath.Join(dir, "out.ply")
		os.Remove(dst)
		n, err := media.Decimate(src, dst, keep%1000)
		if err != nil {
			require.NoFileExists(t, dst)
			return
		}
		h, err := media.StatPLY(dst)
		require.NoError(t, err)
		require.True(t, h.Plain)
		require.EqualValues(t, n, h.Vertices)
		require.LessOrEqual(t, n, max(1, keep%1000))
		require.False(t, math.IsNaN(float64(n)))
	})
}
