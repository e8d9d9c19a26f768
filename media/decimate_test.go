package media_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/media"
)

// TestLODLevels: from the scene down to exactly the coarsest count, each level at most four
// times the next, the steps even.
func TestLODLevels(t *testing.T) {
	cases := []struct {
		n, coarsest int
		want        []int
	}{
		{1_000_000, 2_000, []int{288_540, 83_255, 24_022, 6_931, 2_000}},
		{3_000_000, 2_000, []int{886_692, 262_074, 77_460, 22_894, 6_767, 2_000}},
		{40_000, 2_000, []int{14_736, 5_429, 2_000}},
		{8_001, 2_000, []int{4_000, 2_000}},
		{8_000, 2_000, []int{2_000}}, // exactly four times: one step
		{2_001, 2_000, []int{2_000}},
		{2_000, 2_000, nil},
		{10, 0, []int{3, 1}},
		{1, 1, nil},
		{0, 1, nil},
	}
	for _, tc := range cases {
		got := media.LODLevels(tc.n, tc.coarsest)
		require.Equal(t, tc.want, got, "LODLevels(%d, %d)", tc.n, tc.coarsest)
		prev := tc.n
		for _, c := range got {
			require.Less(t, c, prev)
			require.LessOrEqual(t, prev, 4*c+1, "at most four times the next level (rounded)")
			prev = c
		}
	}
}

// TestDecimate: about keep Gaussians, a Plain PLY with every property, the same bytes every
// time, a subset of the input's Gaussians enlarged a little, spread over the whole scene.
func TestDecimate(t *testing.T) {
	for _, sh := range []int{0, 3} {
		src := writeFile(t, "in.ply", trainingPLY(t, stand, 20_000, sh))
		in := decodeFile(t, src)
		dst := filepath.Join(t.TempDir(), "out.ply")
		got, err := media.Decimate(src, dst, 5_000)
		require.NoError(t, err)
		require.InDelta(t, 5_000, got, 150)
		out := decodeFile(t, dst)
		require.Len(t, out.recs, got)
		require.Equal(t, in.h.Properties, out.h.Properties)
		require.Equal(t, sh, out.h.SHDegree)

		// A subset: each output Gaussian is an input one, only its scales changed, by the same
		// offset on the three axes, never shrunk; on average less than equal Gaussians would
		// need, √(n/k), since the larger ones were kept, and nowhere much more (a cell's share
		// rounds to whole Gaussians).
		byPos := map[[3]float32]int{}
		for i := range in.recs {
			byPos[in.pos(t, i)] = i
		}
		seen := map[int]bool{}
		equal := 0.5 * math.Log(20_000.0/5_000)
		bound := 0.5 * math.Log(2*20_000.0/5_000)
		var grown float64
		for j := range out.recs {
			i, ok := byPos[out.pos(t, j)]
			require.True(t, ok, "Gaussian %d of the output is not in the input", j)
			require.False(t, seen[i], "Gaussian %d kept twice", i)
			seen[i] = true
			off := out.get(t, j, "scale_0") - in.get(t, i, "scale_0")
			require.GreaterOrEqual(t, off, -1e-6)
			require.LessOrEqual(t, off, bound)
			for _, p := range []string{"scale_1", "scale_2"} {
				require.InDelta(t, off, out.get(t, j, p)-in.get(t, i, p), 1e-5)
			}
			grown += off
			for _, p := range out.h.Properties {
				if !strings.HasPrefix(p.Name, "scale_") {
					require.Equal(t, in.get(t, i, p.Name), out.get(t, j, p.Name), p.Name)
				}
			}
		}
		t.Logf("SH %d: kept %d, mean log-scale offset %.3f (equal Gaussians: %.3f)", sh, got, grown/float64(got), equal)
		require.Greater(t, grown/float64(got), 0.05, "the kept Gaussians grow to cover for the others")
		require.Less(t, grown/float64(got), equal)

		// Spread: the kept ones span the scene, and the red column keeps its share.
		lo, hi := in.box(t)
		olo, ohi := out.box(t)
		for k := range 3 {
			require.InDelta(t, lo[k], olo[k], 0.05*(hi[k]-lo[k]), "min of axis %d", k)
			require.InDelta(t, hi[k], ohi[k], 0.05*(hi[k]-lo[k]), "max of axis %d", k)
		}
		red := func(s scene) float64 {
			n := 0
			for i := range s.recs {
				if s.get(t, i, "f_dc_0") > s.get(t, i, "f_dc_1") {
					n++
				}
			}
			return float64(n) / float64(len(s.recs))
		}
		require.InDelta(t, red(in), red(out), 0.05)

		// Deterministic: a retry writes the same bytes.
		again := filepath.Join(t.TempDir(), "again.ply")
		_, err = media.Decimate(src, again, 5_000)
		require.NoError(t, err)
		a, _ := os.ReadFile(dst)
		b, _ := os.ReadFile(again)
		require.True(t, bytes.Equal(a, b), "the same input gives the same bytes")
	}
}

// TestDecimateImportance: given the choice, the opaque and the large Gaussians stay.
func TestDecimateImportance(t *testing.T) {
	for _, tc := range []struct {
		name string
		weak func(s scene, i int)
	}{
		{"faint", func(s scene, i int) { s.set(t, i, "opacity", -5) }},
		{"small", func(s scene, i int) {
			for _, p := range []string{"scale_0", "scale_1", "scale_2"} {
				s.set(t, i, p, float32(s.get(t, i, p)-2))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := trainingPLY(t, stand, 10_000, 0)
			in := decode(t, data)
			for i := 1; i < len(in.recs); i += 2 {
				tc.weak(in, i) // every other Gaussian, all over the scene
			}
			src := writeFile(t, "in.ply", data)
			byPos := map[[3]float32]int{}
			for i := range in.recs {
				byPos[in.pos(t, i)] = i
			}
			dst := filepath.Join(t.TempDir(), "out.ply")
			n, err := media.Decimate(src, dst, 5_000)
			require.NoError(t, err)
			out := decodeFile(t, dst)
			strong := 0
			for j := range out.recs {
				if byPos[out.pos(t, j)]%2 == 0 {
					strong++
				}
			}
			t.Logf("%d of %d kept are the strong ones", strong, n)
			require.Greater(t, float64(strong)/float64(n), 0.8, "%d of %d kept are the strong ones", strong, n)
		})
	}
}

// TestDecimateKeepAll: asking for as many as there are copies every Gaussian unchanged.
func TestDecimateKeepAll(t *testing.T) {
	data := trainingPLY(t, ball, 300, 1)
	src := writeFile(t, "in.ply", data)
	dst := filepath.Join(t.TempDir(), "out.ply")
	n, err := media.Decimate(src, dst, 1_000)
	require.NoError(t, err)
	require.Equal(t, 300, n)
	out, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.Equal(t, data, out)

	n, err = media.Decimate(src, dst, 1)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Len(t, decodeFile(t, dst).recs, 1)
}

// TestDecimateRejects: what Decimate cannot read, or would destroy, is a clear error, and
// leaves no output behind.
func TestDecimateRejects(t *testing.T) {
	good := fixtures.PLY(100)
	nan := bytes.Clone(good)
	s := decode(t, nan)
	s.set(t, 42, "scale_1", float32(math.NaN()))
	inf := bytes.Clone(good)
	decode(t, inf).set(t, 7, "f_dc_2", float32(math.Inf(1)))
	huge := bytes.Replace(good, []byte("element vertex 100\n"), []byte("element vertex 2147483648\n"), 1)
	cases := map[string]struct {
		data []byte
		keep int
		want string
	}{
		"keep 0":      {good, 0, "keep must be at least 1"},
		"compressed":  {fixtures.CompressedPLY(100), 10, "not a plain 3DGS PLY"},
		"splat":       {fixtures.Splat(100), 10, "not a PLY"},
		"truncated":   {good[:len(good)-10], 10, "truncated"},
		"2^31 claim":  {huge, 10, "claims 2147483648 vertices"},
		"NaN scale":   {nan, 10, "Gaussian 42: property scale_1 is NaN"},
		"Inf colour":  {inf, 10, "Gaussian 7: property f_dc_2 is +Inf"},
		"NaN, keeps":  {nan, 1000, "is NaN"},
		"no Gaussian": {[]byte(strings.Replace(string(good[:bytes.Index(good, []byte("end_header"))]), "vertex 100", "vertex 0", 1) + "end_header\n"), 10, "no Gaussians"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := writeFile(t, "in.ply", tc.data)
			dst := filepath.Join(t.TempDir(), "out.ply")
			_, err := media.Decimate(src, dst, tc.keep)
			require.ErrorContains(t, err, tc.want)
			require.NoFileExists(t, dst)
		})
	}
	src := writeFile(t, "in.ply", good)
	_, err := media.Decimate(src, src, 10)
	require.ErrorContains(t, err, "onto itself")
	got, err := os.ReadFile(src)
	require.NoError(t, err)
	require.Equal(t, good, got, "the source is untouched")
}
