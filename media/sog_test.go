package media_test

import (
	"errors"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/media"
)

// mapFiles reads a SOG's files from a LOD folder held in memory, relative to dir.
func mapFiles(folder map[string][]byte, dir string) media.SOGFiles {
	return func(name string) ([]byte, error) {
		b, ok := folder[filepath.ToSlash(filepath.Join(dir, name))]
		if !ok {
			return nil, fmt.Errorf("%s: %w", name, os.ErrNotExist)
		}
		return b, nil
	}
}

// sogParts opens a bundled .sog as the one part of a scene.
func sogParts(t *testing.T, data []byte) []media.SOGPart {
	t.Helper()
	files, closeZip, err := media.OpenSOGZip(writeFile(t, "scene.sog", data))
	require.NoError(t, err)
	t.Cleanup(func() { _ = closeZip() })
	return []media.SOGPart{{Files: files, Count: -1}}
}

// TestWriteSOGPLY: a .sog decodes into a Plain PLY of the same Gaussians as the PLY it encodes,
// within SOG's quantisation (16-bit log-space positions, 256-value codebooks, 8-bit
// quaternions), in the SOG's order.
func TestWriteSOGPLY(t *testing.T) {
	const n = 3000
	dst := filepath.Join(t.TempDir(), "sog.ply")
	got, err := media.WriteSOGPLY(dst, sogParts(t, stand.SOG(n)))
	require.NoError(t, err)
	require.EqualValues(t, n, got)
	sog := decodeFile(t, dst)
	ply := decode(t, stand.PLY(n))
	require.Len(t, sog.recs, n)
	require.Equal(t, 0, sog.h.SHDegree, "the harmonics are left out")

	// Positions span a few units: a 16-bit step of the log range is about 1e-4 of it.
	lo, hi := ply.box(t)
	for i := range n {
		for k, c := range "xyz" {
			require.InDelta(t, ply.get(t, i, string(c)), sog.get(t, i, string(c)), 2e-3*(hi[k]-lo[k]), "Gaussian %d %c", i, c)
		}
		for k := range 3 {
			name := fmt.Sprintf("scale_%d", k)
			require.InDelta(t, ply.get(t, i, name), sog.get(t, i, name), 0.05, "Gaussian %d %s", i, name)
			name = fmt.Sprintf("f_dc_%d", k)
			require.InDelta(t, ply.get(t, i, name), sog.get(t, i, name), 0.05, "Gaussian %d %s", i, name)
		}
		sig := func(s scene) float64 { return 1 / (1 + math.Exp(-s.get(t, i, "opacity"))) }
		require.InDelta(t, sig(ply), sig(sog), 0.01, "Gaussian %d opacity", i)
		var dot, norm float64
		for k := range 4 {
			name := fmt.Sprintf("rot_%d", k)
			dot += ply.get(t, i, name) * sog.get(t, i, name)
			norm += ply.get(t, i, name) * ply.get(t, i, name)
		}
		require.InDelta(t, 1, math.Abs(dot)/math.Sqrt(norm), 0.01, "Gaussian %d rotation (q and -q are one)", i)
	}
}

// TestSOGPoster: the poster of a .sog of the standing scan (stored y-down) is upright, like the
// viewer's first frame, and shows what the poster of the same scene's PLY shows.
func TestSOGPoster(t *testing.T) {
	const n = 20_000
	jpgPath, got, err := media.SOGPoster(sogParts(t, stand.SOG(n)), t.TempDir(), media.PosterOptions{})
	require.NoError(t, err)
	require.EqualValues(t, n, got)
	data, err := os.ReadFile(jpgPath)
	require.NoError(t, err)
	green, red, img := colours(t, data)
	t.Logf("sog poster: ground %+v, column %+v", green, red)
	requireUpright(t, img, green, red)

	ref, err := media.RenderPoster(writeFile(t, "stand.ply", stand.PLY(n)), media.PosterOptions{})
	require.NoError(t, err)
	refGreen, refRed, refImg := colours(t, ref)
	require.InDelta(t, refGreen.y, green.y, 0.02, "the ground where the PLY's poster has it")
	require.InDelta(t, refRed.x, red.x, 0.02, "the column where the PLY's poster has it")
	require.Less(t, meanDiff(img, refImg), 6.0, "the SOG's poster is the PLY's, up to quantisation")
}

// requireUpright checks a poster of the standing scan shows it as the viewer does: the green
// ground in the lower half, the red column above it and right of the ground's centre.
func requireUpright(t *testing.T, img image.Image, green, red share) {
	t.Helper()
	require.Equal(t, image.Rect(0, 0, media.DefaultWidth, media.DefaultHeight), img.Bounds())
	require.Greater(t, green.share, minShare)
	require.Greater(t, red.share, minShare)
	require.Greater(t, green.lower, 0.8, "the ground is in the lower half")
	require.Less(t, red.y, green.y, "the column stands above its ground")
	require.Greater(t, red.x, green.x, "the column (at +x) is right of the ground's centre, not mirrored")
}

// meanDiff is the mean absolute difference of two same-size images, per channel, 0..255.
func meanDiff(a, b image.Image) float64 {
	var sum float64
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ar, ag, ab, _ := a.At(x, y).RGBA()
			br, bg, bb, _ := b.At(x, y).RGBA()
			sum += math.Abs(float64(ar>>8)-float64(br>>8)) + math.Abs(float64(ag>>8)-float64(bg>>8)) + math.Abs(float64(ab>>8)-float64(bb>>8))
		}
	}
	return sum / float64(3*r.Dx()*r.Dy())
}

// TestPosterLevel: a LOD folder's poster is drawn from its finest level within the budget, or
// its coarsest when none fits; the level's runs decode to its Gaussians and show the scene
// upright.
func TestPosterLevel(t *testing.T) {
	const n = 20_000
	folder := stand.LODFolder(n)
	manifest := folder[fixtures.LODManifest]

	level, runs, count, err := media.PosterLevel(manifest, n)
	require.NoError(t, err)
	require.Equal(t, 0, level, "the whole scene fits the budget")
	require.EqualValues(t, n, count)

	level, runs, count, err = media.PosterLevel(manifest, n/2)
	require.NoError(t, err)
	require.Equal(t, 1, level, "the coarser level, a quarter of the scene")
	require.EqualValues(t, n/4, count)
	require.Len(t, runs, 2, "one run per leaf of the tree")

	level, _, _, err = media.PosterLevel(manifest, 10)
	require.NoError(t, err)
	require.Equal(t, 1, level, "nothing fits: the coarsest")

	var parts []media.SOGPart
	for _, r := range runs {
		parts = append(parts, media.SOGPart{Files: mapFiles(folder, filepath.Dir(r.File)), Offset: r.Offset, Count: r.Count})
	}
	jpgPath, got, err := media.SOGPoster(parts, t.TempDir(), media.PosterOptions{})
	require.NoError(t, err)
	require.Equal(t, count, got)
	data, err := os.ReadFile(jpgPath)
	require.NoError(t, err)
	green, red, img := colours(t, data)
	t.Logf("lod poster (level 1): ground %+v, column %+v", green, red)
	requireUpright(t, img, green, red)
}

// TestSOGPosterRejects: corrupt and hostile SOGs and manifests are the input's fault
// (*media.InputError, never retried), found before anything large is read or allocated.
func TestSOGPosterRejects(t *testing.T) {
	inputError := func(t *testing.T, err error, want string) {
		t.Helper()
		var ie *media.InputError
		require.True(t, errors.As(err, &ie), "%v is the input's fault", err)
		require.Contains(t, err.Error(), want)
	}

	_, _, err := media.OpenSOGZip(writeFile(t, "x.sog", []byte("not a zip")))
	inputError(t, err, "not a zip")

	// A zip bomb: meta.json declares 1 GiB.
	_, _, err = media.SOGPoster(sogParts(t, fixtures.SOGBomb(1<<30)), t.TempDir(), media.PosterOptions{})
	inputError(t, err, "inflates to 1073741824 bytes")

	folder := ball.LODFolder(40)
	for name, c := range map[string]struct {
		meta string
		want string
	}{
		"version 1":         {`{"version":1,"count":40}`, "version 1"},
		"no count":          {`{"version":2}`, "count 0"},
		"count over bounds": {`{"version":2,"count":99999999999}`, "count 99999999999"},
		"not json":          {`{`, "sog meta.json"},
	} {
		t.Run(name, func(t *testing.T) {
			files := func(n string) ([]byte, error) {
				if n == "meta.json" {
					return []byte(c.meta), nil
				}
				return mapFiles(folder, "0_0")(n)
			}
			_, err := media.WriteSOGPLY(filepath.Join(t.TempDir(), "x.ply"), []media.SOGPart{{Files: files, Count: -1}})
			inputError(t, err, c.want)
		})
	}

	// Textures smaller than the count they must hold.
	big := ball.LODFolder(400)
	files := func(n string) ([]byte, error) {
		if n == "meta.json" {
			return big["0_0/meta.json"], nil
		}
		return mapFiles(folder, "0_0")(n)
	}
	_, err = media.WriteSOGPLY(filepath.Join(t.TempDir(), "x.ply"), []media.SOGPart{{Files: files, Count: -1}})
	inputError(t, err, "texels for 400 Gaussians")

	// Rows beyond the SOG.
	_, err = media.WriteSOGPLY(filepath.Join(t.TempDir(), "x.ply"), []media.SOGPart{{Files: mapFiles(folder, "0_0"), Offset: 30, Count: 20}})
	inputError(t, err, "beyond its 40 Gaussians")

	for name, c := range map[string]struct{ manifest, want string }{
		"not json":     {`[`, "lod-meta.json"},
		"no tree":      {`{"filenames":["0_0/meta.json"]}`, "no tree"},
		"bad file":     {`{"filenames":["0_0/meta.json"],"tree":{"lods":{"0":{"file":3,"offset":0,"count":1}}}}`, "file 3"},
		"bad level":    {`{"filenames":["0_0/meta.json"],"tree":{"lods":{"x":{"file":0,"offset":0,"count":1}}}}`, `level "x"`},
		"empty":        {`{"filenames":["0_0/meta.json"],"tree":{"lods":{}}}`, "no Gaussians"},
		"negative row": {`{"filenames":["0_0/meta.json"],"tree":{"lods":{"0":{"file":0,"offset":-1,"count":1}}}}`, "rows -1+1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, _, err := media.PosterLevel([]byte(c.manifest), 100)
			inputError(t, err, c.want)
		})
	}
}
