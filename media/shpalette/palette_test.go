package shpalette

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// viewDependent returns n Gaussians' degree-d coefficients (f_rest order): a smooth but
// non-symmetric function of each Gaussian's position on a surface plus a little noise, so that
// neighbours share colours (what a palette exploits) and every coefficient matters.
func viewDependent(n, d int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	dim := 3 * Coefficients(d)
	x := make([]float32, n*dim)
	for i := range n {
		u, v := rng.Float64(), rng.Float64()
		for j := range dim {
			f := float64(j + 1)
			x[i*dim+j] = float32(0.4*math.Sin(3*u*f+2*v+0.3*f)*math.Cos(5*v-u*f/3) + 0.02*rng.NormFloat64())
		}
	}
	return x
}

func TestTrainSpeed(t *testing.T) {
	for _, n := range []int{200_000} {
		x := viewDependent(n, 3, 1)
		k := Size(n)
		start := time.Now()
		p := Train(x, 45, k, Options{})
		tr := time.Since(start)
		e := Quantize(p)
		dec := make([]float32, len(x))
		for i, l := range p.Labels {
			for j := range 45 {
				dec[i*45+j] = e.Codebook[e.Codes[int(l)*45+j]]
			}
		}
		var rms float64
		for _, v := range x {
			rms += float64(v) * float64(v)
		}
		t.Logf("n=%d k=%d train %s (total %s) rmse %.4f (of rms %.4f)", n, k, tr, time.Since(start), RMSE(x, dec), math.Sqrt(rms/float64(len(x))))
	}
	require.True(t, true)
}
