package media

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"math"
)

// DefaultMaxSplats is how many Gaussians a poster samples at most by default: enough that a
// 640×360 image of a multi-million scene looks the same, few enough to render in about a second.
const DefaultMaxSplats = 400_000

// posterQuality is the JPEG quality of a poster: no visible blocking on smooth splat gradients,
// a third of the size of quality 95.
const posterQuality = 85

// maxPosterSide bounds a poster's sides: its buffers are 16 bytes a pixel.
const maxPosterSide = 8192

// PosterOptions tunes RenderPoster; the zero value renders what the viewer first shows of a
// scene without levelData, at 640×360.
type PosterOptions struct {
	// Width and Height are the image's size in pixels (1..8192); 0 is DefaultWidth or
	// DefaultHeight.
	Width, Height int
	// Orientation is levelData.orientation.rotation: Euler degrees applied X, then Y, then Z
	// about the world axes. Nil is DefaultOrientation, [180, 0, 0].
	Orientation *[3]float64
	// Camera is levelData.camera; nil frames the turned scene's bounds as the viewer does.
	Camera *Camera
	// Background is the clear colour (levelData.background); nil is DefaultBackground.
	Background *[3]uint8
	// MaxSplats bounds how many Gaussians are drawn (sampled evenly through the file, each
	// enlarged to cover for the ones left out); 0 is DefaultMaxSplats.
	MaxSplats int
}

// resolve returns opt with its defaults filled in, or an error for a value no poster has.
func (opt PosterOptions) resolve() (PosterOptions, error) {
	if opt.Width == 0 {
		opt.Width = DefaultWidth
	}
	if opt.Height == 0 {
		opt.Height = DefaultHeight
	}
	if opt.Width < 1 || opt.Height < 1 || opt.Width > maxPosterSide || opt.Height > maxPosterSide {
		return opt, fmt.Errorf("media: poster size %dx%d: want sides of 1..%d pixels", opt.Width, opt.Height, maxPosterSide)
	}
	if opt.MaxSplats == 0 {
		opt.MaxSplats = DefaultMaxSplats
	}
	if opt.MaxSplats < 1 {
		return opt, fmt.Errorf("media: MaxSplats %d: want at least 1 (or 0 for %d)", opt.MaxSplats, DefaultMaxSplats)
	}
	if opt.Orientation == nil {
		o := DefaultOrientation
		opt.Orientation = &o
	}
	for _, d := range opt.Orientation {
		if !isFinite(d) {
			return opt, fmt.Errorf("media: orientation %v is not finite", *opt.Orientation)
		}
	}
	if opt.Background == nil {
		bg := DefaultBackground
		opt.Background = &bg
	}
	return opt, nil
}

// RenderPoster renders the Plain PLY src as a JPEG the way the viewer first shows it, on the
// CPU: the scene turned by opt.Orientation, seen from opt.Camera or framed as the viewer frames
// it (PosterCamera), the Gaussians splatted as 3D Gaussian Splatting does (EWA projection of
// each 3D covariance, 3σ footprints, depth-sorted front-to-back alpha compositing; raster.go
// tells the details) over opt.Background, encoded as a JPEG of quality 85. Only the base colour
// is drawn (0.5 + 0.2820948·f_dc, clamped): the view-dependent harmonics change little in a
// thumbnail. A scene of more than opt.MaxSplats Gaussians is sampled evenly by index, each
// kept one enlarged by √(n/MaxSplats) to cover for the others.
func RenderPoster(src string, opt PosterOptions) ([]byte, error) {
	opt, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	gs, bounds, err := readSample(src, opt.MaxSplats)
	if err != nil {
		return nil, err
	}
	view, err := PosterCamera(bounds, opt)
	if err != nil {
		return nil, err
	}
	img := rasterise(gs, &view, *opt.Background)
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: posterQuality}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// gaussian is one Gaussian as the rasteriser draws it.
type gaussian struct {
	pos   [3]float32
	scale [3]float32 // linear standard deviations, enlarged when sampled
	rot   [4]float32 // unit quaternion x y z w
	rgb   [3]float32 // 0..1
	alpha float32    // sigmoid(opacity)
}

// shC0 is the zeroth-order spherical-harmonics constant: colour = 0.5 + shC0·f_dc, as every
// 3DGS renderer decodes the base colour.
const shC0 = 0.28209479177387814

// readSample reads the Plain PLY at path once: the bounds of all its Gaussians (the viewer's,
// see boundsOf) and at most maxSplats of them, evenly spread over the file (Bresenham on the
// index: the i-th is taken when floor(i·k/n) steps), decoded for drawing.
func readSample(path string, maxSplats int) ([]gaussian, Bounds, error) {
	p, err := openPlain(path)
	if err != nil {
		return nil, Bounds{}, err
	}
	defer p.close()
	n := int64(p.n)
	k := min(n, int64(maxSplats))
	grow := coverScale(p.n, int(k))
	gs := make([]gaussian, 0, k)
	acc := newBounds()
	l := &p.l
	err = p.each(func(i int, rec []byte) error {
		if err := p.checkFinite(i, rec); err != nil {
			return err
		}
		acc.add(l, rec)
		if (int64(i)+1)*k/n == int64(i)*k/n {
			return nil
		}
		var g gaussian
		for c := range 3 {
			g.pos[c] = float32(f32(rec, l.pos[c]))
			g.scale[c] = float32(math.Exp(f32(rec, l.scale[c]) + grow))
			g.rgb[c] = float32(min(max(0.5+shC0*f32(rec, l.dc[c]), 0), 1))
		}
		// rot_0 is w; PlayCanvas normalises the quaternion, and a zero one stays unturned.
		w, x, y, z := f32(rec, l.rot[0]), f32(rec, l.rot[1]), f32(rec, l.rot[2]), f32(rec, l.rot[3])
		if norm := math.Sqrt(w*w + x*x + y*y + z*z); norm > 0 && isFinite(norm) {
			g.rot = [4]float32{float32(x / norm), float32(y / norm), float32(z / norm), float32(w / norm)}
		} else {
			g.rot = [4]float32{0, 0, 0, 1}
		}
		g.alpha = float32(1 / (1 + math.Exp(-f32(rec, l.opacity))))
		gs = append(gs, g)
		return nil
	})
	if err != nil {
		return nil, Bounds{}, err
	}
	b, err := acc.result()
	return gs, b, err
}
