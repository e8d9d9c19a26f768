package shpalette

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// viewDependent returns n Gaussians' degree-d coefficients (f_rest order): a smooth function of
// each Gaussian's place on a surface (u, v), different per coefficient and channel and not
// symmetric in either, plus noise of standard deviation noise that no palette smaller than n
// can represent.
func viewDependent(n, d int, noise float64, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	dim := 3 * Coefficients(d)
	x := make([]float32, n*dim)
	for i := range n {
		u, v := rng.Float64(), rng.Float64()
		for j := range dim {
			f := float64(j + 1)
			x[i*dim+j] = float32(0.4*math.Sin(3*u*f+2*v+0.3*f)*math.Cos(5*v-u*f/3) + noise*rng.NormFloat64())
		}
	}
	return x
}

func TestSizeFollowsSplatTransform(t *testing.T) {
	for n, want := range map[int]int{0: 0, 1: 1, 500: 256, 1024: 1024, 2000: 1024, 20_000: 16_384, 65_535: 32_768, 65_536: 65_536, 3_000_000: 65_536} {
		require.Equal(t, want, Size(n), "n=%d", n)
	}
	require.Equal(t, []int{3, 8, 15}, []int{Coefficients(1), Coefficients(2), Coefficients(3)})
}

// TestPaletteRoundTrip: a palette written as the SOG's textures and read back the way the
// PlayCanvas engine reads them (WebP decoded, label → centroid texel → codebook) gives back the
// input's coefficients, for every degree.
//
// The bound: the input carries noise of 0.02 per coefficient on top of a smooth signal of RMS
// about 0.2 (dropping the harmonics costs that much). 20 000 Gaussians get 16 384 centroids, so
// the palette's error stays under the noise it cannot represent, and the 256-value codebook
// adds about its step over √12 (a range of ±0.4 in 256 steps: under 0.001).
func TestPaletteRoundTrip(t *testing.T) {
	const n, noise = 20_000, 0.02
	for d := 1; d <= 3; d++ {
		dim := 3 * Coefficients(d)
		x := viewDependent(n, d, noise, uint64(d))
		pal := Train(x, dim, Size(n), Options{Seed: 7})
		require.Equal(t, Size(n), pal.K())
		enc := Quantize(pal)
		require.Len(t, enc.Codebook, CodebookSize)

		const w, h = 144, 140 // splat-transform's texture size for 20 000 Gaussians
		cb, err := EncodeWebP(enc.CentroidsImage())
		require.NoError(t, err)
		lb, err := EncodeWebP(LabelsImage(pal.Labels, w, h))
		require.NoError(t, err)
		cimg, err := DecodeWebP(cb)
		require.NoError(t, err)
		limg, err := DecodeWebP(lb)
		require.NoError(t, err)
		require.Equal(t, 64*Coefficients(d), cimg.Bounds().Dx(), "64 centroids per row")
		require.Equal(t, Size(n)/64, cimg.Bounds().Dy())
		require.Equal(t, w, limg.Bounds().Dx())

		got, err := Decode(Meta{Count: pal.K(), Bands: d, Codebook: enc.Codebook, Files: Files}, cimg, limg, n)
		require.NoError(t, err)
		rmse := RMSE(x, got)
		t.Logf("degree %d: RMSE %.4f against the coefficients' RMS %.4f", d, rmse, RMSE(x, make([]float32, len(x))))
		require.Less(t, rmse, noise)
	}
}

// TestTrainExactWhenEveryGaussianFits: with as many centroids as Gaussians each keeps its own.
func TestTrainExactWhenEveryGaussianFits(t *testing.T) {
	x := viewDependent(300, 2, 0.1, 3)
	pal := Train(x, 24, Size(300), Options{})
	require.Equal(t, 256, pal.K(), "256 of 300")
	pal = Train(x, 24, 1000, Options{})
	require.Equal(t, 300, pal.K(), "no more centroids than Gaussians")
	require.Equal(t, x, pal.Centroids)
	for i, l := range pal.Labels {
		require.Equal(t, uint16(i), l)
	}
}
