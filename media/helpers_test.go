package media_test

import (
	"bytes"
	"encoding/binary"
	"github.com/splathost/splathost/internal/plyfile"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
)

var (
	ball  = fixtures.Gen{Seed: fixtures.DefaultSeed}
	stand = fixtures.Gen{Seed: fixtures.DefaultSeed, Scene: fixtures.SceneStand}
)

// trainingPLY returns the fixture training PLY of g with n splats at SH degree sh.
func trainingPLY(t testing.TB, g fixtures.Gen, n, sh int) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, g.WriteTrainingPLY(&b, n, sh))
	return b.Bytes()
}

// writeFile writes data to a fresh file of the test's temporary directory and returns its path.
func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

// scene is a Plain PLY decoded by property name.
type scene struct {
	h    plyfile.Header
	recs [][]byte
}

// decode parses a Plain PLY's bytes with ReadPLYHeader.
func decode(t testing.TB, data []byte) scene {
	t.Helper()
	h, err := plyfile.ReadHeader(bytes.NewReader(data))
	require.NoError(t, err)
	require.True(t, h.Plain, h.NotPlain)
	body := data[h.HeaderLen:]
	require.Len(t, body, int(h.Vertices)*h.Stride)
	s := scene{h: h}
	for i := range int(h.Vertices) {
		s.recs = append(s.recs, body[i*h.Stride:(i+1)*h.Stride])
	}
	return s
}

// decodeFile reads and decodes the Plain PLY at path.
func decodeFile(t testing.TB, path string) scene {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return decode(t, data)
}

// get returns property name of Gaussian i.
func (s scene) get(t testing.TB, i int, name string) float64 {
	t.Helper()
	off := s.h.Offset(name)
	require.GreaterOrEqual(t, off, 0, "property %s", name)
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(s.recs[i][off:])))
}

// set changes property name of Gaussian i (in place: the bytes the scene was decoded from).
func (s scene) set(t testing.TB, i int, name string, v float32) {
	t.Helper()
	off := s.h.Offset(name)
	require.GreaterOrEqual(t, off, 0, "property %s", name)
	binary.LittleEndian.PutUint32(s.recs[i][off:], math.Float32bits(v))
}

// pos returns the position of Gaussian i.
func (s scene) pos(t testing.TB, i int) [3]float32 {
	return [3]float32{float32(s.get(t, i, "x")), float32(s.get(t, i, "y")), float32(s.get(t, i, "z"))}
}

// box returns the min and max of the Gaussians' positions.
func (s scene) box(t testing.TB) (lo, hi [3]float64) {
	for k := range 3 {
		lo[k], hi[k] = math.Inf(1), math.Inf(-1)
	}
	for i := range s.recs {
		p := s.pos(t, i)
		for k := range 3 {
			lo[k] = min(lo[k], float64(p[k]))
			hi[k] = max(hi[k], float64(p[k]))
		}
	}
	return lo, hi
}
