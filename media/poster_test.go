package media_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/media"
)

// share is where the pixels of one colour lie, as web/tests/helpers.mjs standColours measures
// a viewer's canvas: their share of the frame, their centroid as fractions of the width and
// height (y down), and the fraction of them in the lower half.
type share struct {
	share, x, y, lower float64
}

// colours classifies the poster's pixels as the browser tests do: green when G exceeds R and B
// by more than 60, red when R exceeds G and B by more than 60.
func colours(t *testing.T, data []byte) (green, red share, img image.Image) {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	b := img.Bounds()
	var g, r struct{ n, x, y, lower float64 }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			R, G, B := int(cr>>8), int(cg>>8), int(cb>>8)
			acc := &g
			switch {
			case G-max(R, B) > 60:
			case R-max(G, B) > 60:
				acc = &r
			default:
				continue
			}
			acc.n++
			acc.x += float64(x)
			acc.y += float64(y)
			if y >= b.Dy()/2 {
				acc.lower++
			}
		}
	}
	out := func(a struct{ n, x, y, lower float64 }) share {
		n := float64(b.Dx() * b.Dy())
		return share{a.n / n, a.x / a.n / float64(b.Dx()), a.y / a.n / float64(b.Dy()), a.lower / a.n}
	}
	return out(g), out(r), img
}

// minShare is the browser test's: the ground covers about a tenth of the frame, the column a
// few percent.
const minShare = 0.005

// TestPosterStand: the standing scan shows as the viewer's browser tests require
// (web/tests/orientation-common.mjs): upright by default, the green ground in the lower half and
// the red column above it, right of the ground's centre; upside down at orientation [0,0,0];
// and seen from behind, the column moves to the left.
func TestPosterStand(t *testing.T) {
	src := writeFile(t, "stand.ply", trainingPLY(t, stand, 20_000, 3))
	data, err := media.RenderPoster(src, media.PosterOptions{})
	require.NoError(t, err)
	green, red, img := colours(t, data)
	t.Logf("default: ground %+v, column %+v", green, red)
	require.Equal(t, image.Rect(0, 0, 640, 360), img.Bounds())
	require.Greater(t, green.share, minShare)
	require.Greater(t, red.share, minShare)
	require.Greater(t, green.lower, 0.8, "the ground is in the lower half")
	require.Less(t, red.y, green.y, "the column stands above its ground")
	require.Greater(t, red.x, green.x, "the column (at +x) is right of the ground's centre, not mirrored")

	// The column is where the poster's camera projects it.
	bounds, err := media.PLYBounds(src)
	require.NoError(t, err)
	view, err := media.PosterCamera(bounds, media.PosterOptions{})
	require.NoError(t, err)
	px, py, ok := view.Project([3]float64{fixtures.StandColumnX, fixtures.StandGroundY - fixtures.StandColumnHeight/2, 0})
	require.True(t, ok)
	require.InDelta(t, px/640, red.x, 0.02, "the column's axis")
	require.InDelta(t, py/360, red.y, 0.08, "the column's middle")

	flat := [3]float64{0, 0, 0}
	data, err = media.RenderPoster(src, media.PosterOptions{Orientation: &flat})
	require.NoError(t, err)
	green, red, _ = colours(t, data)
	t.Logf("[0,0,0]: ground %+v, column %+v", green, red)
	require.Greater(t, green.share, minShare)
	require.Greater(t, red.share, minShare)
	require.Less(t, green.lower, 0.2, "as stored, the ground is in the upper half")
	require.Greater(t, red.y, green.y, "as stored, the column hangs below its ground")

	// A levelData camera on the other side (-Z), as far and as high as the framing one.
	front := media.FrameBounds(media.RotateBounds(bounds, media.EulerQuat(media.DefaultOrientation)), media.DefaultFOV)
	back := front
	back.Position[2] = 2*front.Target[2] - front.Position[2]
	data, err = media.RenderPoster(src, media.PosterOptions{Camera: &back})
	require.NoError(t, err)
	green, red, _ = colours(t, data)
	t.Logf("from behind: ground %+v, column %+v", green, red)
	require.Greater(t, green.lower, 0.8, "still upright")
	require.Less(t, red.y, green.y)
	require.Less(t, red.x, green.x, "seen from behind, the column is left of the ground's centre")

	// The same scene, file and options always give the same bytes.
	again, err := media.RenderPoster(src, media.PosterOptions{Camera: &back})
	require.NoError(t, err)
	require.Equal(t, data, again)
}

// TestPosterSampled: a poster of a tenth of the Gaussians, enlarged to cover for the rest,
// shows the same scene as one of all of them.
func TestPosterSampled(t *testing.T) {
	src := writeFile(t, "stand.ply", trainingPLY(t, stand, 20_000, 0))
	data, err := media.RenderPoster(src, media.PosterOptions{})
	require.NoError(t, err)
	green, red, _ := colours(t, data)
	data, err = media.RenderPoster(src, media.PosterOptions{MaxSplats: 2_000})
	require.NoError(t, err)
	sg, sr, _ := colours(t, data)
	t.Logf("all: %+v %+v; a tenth: %+v %+v", green, red, sg, sr)
	require.InDelta(t, green.share, sg.share, 0.15*green.share, "the ground stays covered")
	require.InDelta(t, red.share, sr.share, 0.15*red.share)
	require.InDelta(t, green.x, sg.x, 0.01)
	require.InDelta(t, red.y, sr.y, 0.01)
}

// TestPosterBackground: pixels no Gaussian covers are the background colour: the viewer's by
// default, levelData's when given.
func TestPosterBackground(t *testing.T) {
	src := writeFile(t, "stand.ply", trainingPLY(t, stand, 5_000, 0))
	for _, bg := range []*[3]uint8{nil, {200, 40, 180}} {
		want := media.DefaultBackground
		if bg != nil {
			want = *bg
		}
		data, err := media.RenderPoster(src, media.PosterOptions{Width: 320, Height: 180, Background: bg})
		require.NoError(t, err)
		_, _, img := colours(t, data)
		background := 0
		for y := range 180 {
			for x := range 320 {
				r, g, b, _ := img.At(x, y).RGBA()
				if near(int(r>>8), want[0]) && near(int(g>>8), want[1]) && near(int(b>>8), want[2]) {
					background++
				}
			}
		}
		require.Greater(t, background, 320*180/2, "most of the frame is background %v", want)
		for _, c := range []image.Point{{0, 0}, {319, 0}, {0, 179}, {319, 179}} {
			r, g, b, _ := img.At(c.X, c.Y).RGBA()
			require.True(t, near(int(r>>8), want[0]) && near(int(g>>8), want[1]) && near(int(b>>8), want[2]),
				"corner %v is %d,%d,%d, not %v", c, r>>8, g>>8, b>>8, want)
		}
	}
}

// near allows for JPEG's rounding.
func near(got int, want uint8) bool { return math.Abs(float64(got)-float64(want)) <= 6 }

// TestPosterOneGaussian: a lone Gaussian at the camera's target is a blob at the image's centre,
// framed by default and seen from a levelData camera alike.
func TestPosterOneGaussian(t *testing.T) {
	src := writeFile(t, "one.ply", fixtures.PLY(1))
	bounds, err := media.PLYBounds(src)
	require.NoError(t, err)
	var centre [3]float64
	for k := range 3 {
		centre[k] = (bounds.Min[k] + bounds.Max[k]) / 2 // the bounds are centred on the Gaussian
	}
	q := media.EulerQuat(media.DefaultOrientation)
	world := media.RotateBounds(media.Bounds{Min: centre, Max: centre}, q).Min
	size := bounds.Max[0] - bounds.Min[0] // four of its largest standard deviations
	cam := media.Camera{Position: [3]float64{world[0] + 2*size, world[1] + size, world[2] + 4*size}, Target: world, FOV: 40}
	for name, opt := range map[string]media.PosterOptions{
		"framed":      {Width: 200, Height: 100},
		"from a side": {Width: 200, Height: 100, Camera: &cam},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := media.RenderPoster(src, opt)
			require.NoError(t, err)
			img, err := jpeg.Decode(bytes.NewReader(data))
			require.NoError(t, err)
			var n, sx, sy float64
			for y := range 100 {
				for x := range 200 {
					r, g, b, _ := img.At(x, y).RGBA()
					bg := media.DefaultBackground
					if math.Abs(float64(r>>8)-float64(bg[0]))+math.Abs(float64(g>>8)-float64(bg[1]))+math.Abs(float64(b>>8)-float64(bg[2])) > 30 {
						n, sx, sy = n+1, sx+float64(x)+0.5, sy+float64(y)+0.5
					}
				}
			}
			require.Greater(t, n, 20.0, "the Gaussian is drawn")
			require.Less(t, n, 200*100/2.0, "as a blob, not a fill")
			require.InDelta(t, 100, sx/n, 2.5, "centred across")
			require.InDelta(t, 50, sy/n, 2.5, "centred down")
		})
	}
}

// TestViewerMath: the conventions mirrored from web/embed/src, checked against values worked
// out by hand.
func TestViewerMath(t *testing.T) {
	q := media.EulerQuat([3]float64{180, 0, 0})
	require.InDeltaSlice(t, []float64{1, 0, 0, 0}, q[:], 1e-12, "half a turn about X")

	// X first, then Y about the world's axes: +Y goes to +Z (X by 90°), then to +X (Y by 90°).
	p := [3]float64{0, 1, 0}
	got := media.RotateBounds(media.Bounds{Min: p, Max: p}, media.EulerQuat([3]float64{90, 90, 0}))
	require.InDeltaSlice(t, []float64{1, 0, 0}, got.Min[:], 1e-9)

	up := media.RotateBounds(media.Bounds{Min: [3]float64{-1, 0.5, -2}, Max: [3]float64{3, 2, 1}}, q)
	require.Equal(t, media.Bounds{Min: [3]float64{-1, -2, -1}, Max: [3]float64{3, -0.5, 2}}, up, "exact for quarter turns")

	cam := media.FrameBounds(media.Bounds{Min: [3]float64{-1, -1, -1}, Max: [3]float64{1, 1, 1}}, 60)
	dist := math.Sqrt(3) / math.Sin(math.Pi/6) * 1.05
	require.InDeltaSlice(t, []float64{0, dist * math.Sin(20*math.Pi/180), dist * math.Cos(20*math.Pi/180)}, cam.Position[:], 1e-12)
	require.Equal(t, [3]float64{}, cam.Target)

	// The target projects to the centre, +X to the right of it and +Y above it.
	v, err := media.PosterCamera(media.Bounds{Min: [3]float64{-1, -1, -1}, Max: [3]float64{1, 1, 1}}, media.PosterOptions{Orientation: &[3]float64{}})
	require.NoError(t, err)
	x, y, ok := v.Project([3]float64{})
	require.True(t, ok)
	require.InDelta(t, 320, x, 1e-9)
	require.InDelta(t, 180, y, 1e-9)
	x, y, _ = v.Project([3]float64{0.5, 0.5, 0})
	require.Greater(t, x, 320.0)
	require.Less(t, y, 180.0)
	_, _, ok = v.Project(cam.Position)
	require.False(t, ok, "the camera's own position is clipped")
}

// TestPosterRejects: options no poster has, and files it cannot read, are clear errors.
func TestPosterRejects(t *testing.T) {
	src := writeFile(t, "ball.ply", fixtures.PLY(100))
	nan := math.NaN()
	same := media.Camera{Position: [3]float64{1, 2, 3}, Target: [3]float64{1, 2, 3}}
	lost := media.Camera{Position: [3]float64{nan, 0, 5}}
	cases := map[string]struct {
		opt  media.PosterOptions
		want string
	}{
		"negative width":   {media.PosterOptions{Width: -1}, "poster size"},
		"huge":             {media.PosterOptions{Width: 100_000, Height: 10}, "poster size"},
		"negative sample":  {media.PosterOptions{MaxSplats: -5}, "MaxSplats"},
		"NaN orientation":  {media.PosterOptions{Orientation: &[3]float64{0, nan, 0}}, "not finite"},
		"camera on target": {media.PosterOptions{Camera: &same}, "looks nowhere"},
		"NaN camera":       {media.PosterOptions{Camera: &lost}, "camera is not finite"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := media.RenderPoster(src, tc.opt)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// A levelData fov the viewer ignores (outside 1..179) is its default, as in the viewer.
	want := want0(t, src)
	for _, fov := range []float64{180, 0.5, -3, math.Inf(1)} {
		got, err := media.RenderPoster(src, media.PosterOptions{Camera: &media.Camera{Position: [3]float64{0, 0, 5}, FOV: fov}})
		require.NoError(t, err)
		require.Equal(t, want, got, "fov %v", fov)
	}
	narrow, err := media.RenderPoster(src, media.PosterOptions{Camera: &media.Camera{Position: [3]float64{0, 0, 5}, FOV: 20}})
	require.NoError(t, err)
	require.NotEqual(t, narrow, want, "a valid fov is used")

	_, err = media.RenderPoster(writeFile(t, "c.ply", fixtures.CompressedPLY(100)), media.PosterOptions{})
	require.ErrorContains(t, err, "convert it to one with splat-transform")

	// A Gaussian whose log scale overflows leaves no bounds to frame.
	data := fixtures.PLY(10)
	decode(t, data).set(t, 3, "scale_0", 1000)
	_, err = media.RenderPoster(writeFile(t, "big.ply", data), media.PosterOptions{})
	require.ErrorContains(t, err, "bounds are not finite")
}

// want0 is the poster of src from (0, 0, 5) at the default fov.
func want0(t *testing.T, src string) []byte {
	b, err := media.RenderPoster(src, media.PosterOptions{Camera: &media.Camera{Position: [3]float64{0, 0, 5}}})
	require.NoError(t, err)
	return b
}

// oneGaussian returns a PLY of one Gaussian at the origin with the given log scales, rotation
// (w x y z), opacity logit and f_dc colour: fixtures.PLY(1) with its properties replaced.
func oneGaussian(t *testing.T, logScale [3]float32, rot [4]float32, opacity float32, dc float32) string {
	data := fixtures.PLY(1)
	s := decode(t, data)
	for k, c := range []string{"x", "y", "z"} {
		s.set(t, 0, c, 0)
		s.set(t, 0, "scale_"+string(rune('0'+k)), logScale[k])
		s.set(t, 0, "f_dc_"+string(rune('0'+k)), dc)
	}
	for k, v := range rot {
		s.set(t, 0, "rot_"+string(rune('0'+k)), v)
	}
	s.set(t, 0, "opacity", opacity)
	return writeFile(t, "one.ply", data)
}

// moments returns the brightness-weighted centroid and covariance of a grey poster on a black
// background (brightness = the Gaussian's alpha).
func moments(t *testing.T, data []byte) (cx, cy, vxx, vyy, vxy float64) {
	img, err := jpeg.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	b := img.Bounds()
	var w float64
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			g, _, _, _ := img.At(x, y).RGBA()
			v := float64(g>>8) / 255
			if v < 0.02 { // JPEG noise on black
				continue
			}
			px, py := float64(x)+0.5, float64(y)+0.5
			w, cx, cy = w+v, cx+v*px, cy+v*py
			vxx, vyy, vxy = vxx+v*px*px, vyy+v*py*py, vxy+v*px*py
		}
	}
	cx, cy = cx/w, cy/w
	return cx, cy, vxx/w - cx*cx, vyy/w - cy*cy, vxy/w - cx*cy
}

// TestPosterFootprint: a Gaussian is drawn as wide as the perspective makes it (σ·f/z pixels)
// and turned as it is in the scene (EWA projection with the right Jacobian).
func TestPosterFootprint(t *testing.T) {
	black := [3]uint8{0, 0, 0}
	flat := [3]float64{0, 0, 0}
	// White (f_dc such that 0.5 + C0·f_dc = 1) and opaque (sigmoid(10) ≈ 1).
	const white = 0.5 / 0.28209479177387814
	cam := media.Camera{Position: [3]float64{0, 0, 10}, FOV: 60}
	opt := media.PosterOptions{Width: 400, Height: 400, Orientation: &flat, Camera: &cam, Background: &black}
	focal := 200 / math.Tan(math.Pi/6)

	sigma := 0.2
	ls := float32(math.Log(sigma))
	data, err := media.RenderPoster(oneGaussian(t, [3]float32{ls, ls, ls}, [4]float32{1, 0, 0, 0}, 10, white), opt)
	require.NoError(t, err)
	cx, cy, vxx, vyy, vxy := moments(t, data)
	want := math.Sqrt(math.Pow(sigma*focal/10, 2) + 0.3) // + the low-pass filter
	t.Logf("round: centre (%.2f, %.2f), σ %.2f × %.2f px (want %.2f), cov %.2f", cx, cy, math.Sqrt(vxx), math.Sqrt(vyy), want, vxy)
	require.InDelta(t, 200, cx, 0.5)
	require.InDelta(t, 200, cy, 0.5)
	// The 3σ cut and the capped alpha (0.99) trim the measured spread by a few percent.
	require.InDelta(t, want, math.Sqrt(vxx), 0.08*want)
	require.InDelta(t, want, math.Sqrt(vyy), 0.08*want)
	require.InDelta(t, 0, vxy, 0.05*want*want)

	// Long along x (σ 0.5 by 0.05), turned 45° about Z: it rises to the right, so in the
	// image (y down) x and y vary against each other.
	long := [3]float32{float32(math.Log(0.5)), float32(math.Log(0.05)), float32(math.Log(0.05))}
	turn := [4]float32{float32(math.Cos(math.Pi / 8)), 0, 0, float32(math.Sin(math.Pi / 8))}
	data, err = media.RenderPoster(oneGaussian(t, long, turn, 10, white), opt)
	require.NoError(t, err)
	_, _, vxx, vyy, vxy = moments(t, data)
	t.Logf("turned: var %.1f, %.1f, cov %.1f", vxx, vyy, vxy)
	require.InDelta(t, vxx, vyy, 0.1*vxx, "on the diagonal")
	require.Less(t, vxy, -0.8*vxx, "rising to the right")
}
