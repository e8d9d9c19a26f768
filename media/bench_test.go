package media_test

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/media"
)

// benchScene writes the standing scene of n Gaussians at SH degree 3 (248 bytes each, as real
// training output) into a temporary directory.
func benchScene(b *testing.B, n int) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "scene.ply")
	f, err := os.Create(p)
	require.NoError(b, err)
	w := bufio.NewWriter(f)
	require.NoError(b, stand.WriteTrainingPLY(w, n, 3))
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())
	return p
}

// BenchmarkDecimate1M halves a scene of a million Gaussians, as the first LOD level does.
func BenchmarkDecimate1M(b *testing.B) {
	src := benchScene(b, 1_000_000)
	dst := filepath.Join(b.TempDir(), "half.ply")
	b.SetBytes(1_000_000 * 248)
	b.ResetTimer()
	for b.Loop() {
		n, err := media.Decimate(src, dst, 500_000)
		require.NoError(b, err)
		require.Equal(b, 500_000, n)
	}
}

// BenchmarkRenderPoster1M renders the default poster of a scene of a million Gaussians.
func BenchmarkRenderPoster1M(b *testing.B) {
	src := benchScene(b, 1_000_000)
	b.SetBytes(1_000_000 * 248)
	b.ResetTimer()
	for b.Loop() {
		img, err := media.RenderPoster(src, media.PosterOptions{})
		require.NoError(b, err)
		require.NotEmpty(b, img)
	}
}
