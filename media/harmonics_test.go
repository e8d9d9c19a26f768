package media

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMatchFindsEveryTexel: texels are matched to Gaussians by quantised position: twins (one
// position, two Gaussians) get one Gaussian each, a texel one step off (a rounding difference
// between JavaScript's and Go's logarithm) still finds its Gaussian, and a texel with no
// Gaussian near stays unmatched rather than taking a far one.
func TestMatchFindsEveryTexel(t *testing.T) {
	pos := [][3]float32{{0, 0, 0}, {1, 2, 3}, {1, 2, 3}, {-4, 5, -6}, {2, -1, 0.5}}
	lp := make([]float64, 0, 3*len(pos))
	for _, p := range pos {
		for _, v := range p {
			lp = append(lp, logPos(v))
		}
	}
	u := &sogUnit{count: 6}
	for c := range 3 {
		u.mins[c], u.maxs[c] = logPos(-8), logPos(8)
	}
	key := func(g int, shift int64) uint64 {
		var k uint64
		for c := range 3 {
			q, ok := quant(lp[g*3+c], u.mins[c], u.maxs[c])
			require.True(t, ok)
			k |= uint64(q+shift) << (16 * c)
		}
		return k
	}
	// Texels in another order than the Gaussians, as splat-transform writes them.
	u.keys = []uint64{key(3, 0), key(1, 0), key(4, 1), key(2, 0), key(0, 0), 0x0000_7fff_0000}
	match(lp, []*sogUnit{u})
	require.Equal(t, int32(3), u.src[0])
	require.ElementsMatch(t, []int32{1, 2}, []int32{u.src[1], u.src[3]}, "twins get one Gaussian each")
	require.Equal(t, int32(4), u.src[2], "one step off")
	require.Equal(t, int32(0), u.src[4])
	require.Equal(t, int32(-1), u.src[5], "nothing near")
	require.Equal(t, 1, u.stats().Unmatched)
}
