package media

import (
	"image"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// The rasteriser follows 3D Gaussian Splatting (Kerbl et al. 2023, and its reference CUDA
// rasteriser), which PlayCanvas and Spark approximate in their shaders:
//
//   - Each Gaussian's 3D covariance is R·S·Sᵀ·Rᵀ (S its scales, R its quaternion), turned into
//     camera space by the orientation and the camera's basis.
//   - It is projected by the local affine approximation of the perspective (EWA splatting):
//     Σ' = J·W·Σ·Wᵀ·Jᵀ, J the Jacobian of the projection at the centre, with x/z and y/z clamped
//     to 1.3× the field of view as the reference does so that Gaussians at the edge do not
//     blow up; 0.3 px² is added to its diagonal, the reference's low-pass filter that keeps a
//     sub-pixel Gaussian at least a pixel wide.
//   - Its footprint is the 3σ ellipse (Mahalanobis distance 3), drawn inside its bounding box;
//     its alpha at a pixel is opacity·exp(-½ dᵀΣ'⁻¹d), capped at 0.99 and dropped below 1/255.
//   - Gaussians are sorted by depth (the camera-space z of the centre) and composited front to
//     back: C += T·α·c, T *= 1-α, a pixel left alone once T < 1/1000, and the background
//     added last, weighted by what T is left.
//
// Colours are composited as stored (gamma space), as the viewer's engines blend them into
// their 8-bit canvas at the default linear tone mapping.

const (
	lowPass      = 0.3       // px² added to the projected covariance's diagonal
	sigmaCut     = 3.0       // footprint radius in standard deviations
	maxAlpha     = 0.99      // a single Gaussian never hides everything behind it
	minAlpha     = 1.0 / 255 // a contribution below one 8-bit step is skipped
	minTrans     = 1e-3      // a pixel this covered is done
	fovClamp     = 1.3       // x/z, y/z clamp of the Jacobian, in units of the half field of view
	expTableSize = 4096
	// maxPower is the exponent at the footprint's edge: -½·3².
	maxPower = -0.5 * sigmaCut * sigmaCut
)

// expTable holds exp(p) for p from maxPower to 0 in expTableSize steps: the blending loop's
// one transcendental, a lookup instead of math.Exp, at well under an 8-bit step of error.
var expTable = func() (t [expTableSize + 1]float32) {
	for i := range t {
		t[i] = float32(math.Exp(maxPower * float64(i) / expTableSize))
	}
	return t
}()

// splat2D is a Gaussian projected onto the image.
type splat2D struct {
	u, v       float32 // centre, pixels
	ca, cb, cc float32 // the conic: Σ'⁻¹ = [ca cb; cb cc]
	rgb        [3]float32
	alpha      float32
	x0, y0     int32 // the footprint's pixel box, x1 and y1 exclusive
	x1, y1     int32
}

// rasterise draws gs as seen by v over bg.
func rasterise(gs []gaussian, v *View, bg [3]uint8) *image.RGBA {
	splats, depth := projectAll(gs, v)
	order := sortByDepth(depth)

	w, h := v.Width, v.Height
	col := make([]float32, 3*w*h)
	trans := make([]float32, w*h)
	for i := range trans {
		trans[i] = 1
	}
	// Bands of rows, taken by the workers as they come free: a scene's middle is busier than
	// its top, and each pixel belongs to one band, so the result does not depend on who drew it.
	const bandRows = 16
	var next atomic.Int32
	parallel(func() {
		for {
			y0 := int(next.Add(1)-1) * bandRows
			if y0 >= h {
				return
			}
			blendBand(splats, order, w, y0, min(h, y0+bandRows), col, trans)
		}
	})

	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i, t := range trans {
		for c := range 3 {
			img.Pix[4*i+c] = uint8(min(max((col[3*i+c]+t*float32(bg[c])/255)*255+0.5, 0), 255))
		}
		img.Pix[4*i+3] = 255
	}
	return img
}

// parallel runs fn on every core (at most 8: the work is memory-bound beyond) and waits.
func parallel(fn func()) {
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 8) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn()
		}()
	}
	wg.Wait()
}

// blendBand composites the splats, in order, into the rows y0..y1 of the accumulators.
func blendBand(splats []splat2D, order []int32, w, y0, y1 int, col, trans []float32) {
	open := (y1 - y0) * w // pixels not yet covered
	for _, si := range order {
		s := &splats[si]
		ys, ye := max(int(s.y0), y0), min(int(s.y1), y1)
		if ys >= ye {
			continue
		}
		for y := ys; y < ye; y++ {
			dy := float32(y) + 0.5 - s.v
			row := y * w
			for x := int(s.x0); x < int(s.x1); x++ {
				p := row + x
				t := trans[p]
				if t < minTrans {
					continue
				}
				dx := float32(x) + 0.5 - s.u
				power := -0.5*(s.ca*dx*dx+s.cc*dy*dy) - s.cb*dx*dy
				if power < maxPower || power > 0 {
					continue
				}
				a := s.alpha * expTable[int(power*(expTableSize/maxPower)+0.5)]
				if a < minAlpha {
					continue
				}
				a = min(a, maxAlpha)
				col[3*p] += t * a * s.rgb[0]
				col[3*p+1] += t * a * s.rgb[1]
				col[3*p+2] += t * a * s.rgb[2]
				t *= 1 - a
				trans[p] = t
				if t < minTrans {
					open--
				}
			}
		}
		if open == 0 {
			return
		}
	}
}

// projectAll projects gs in parallel chunks; it returns the splats in view and their depths.
func projectAll(gs []gaussian, v *View) ([]splat2D, []float32) {
	workers := min(runtime.GOMAXPROCS(0), 8)
	chunk := (len(gs) + workers - 1) / max(workers, 1)
	parts := make([][]splat2D, workers)
	depths := make([][]float32, workers)
	var next atomic.Int32
	parallel(func() {
		for {
			k := int(next.Add(1) - 1)
			if k >= workers {
				return
			}
			lo, hi := min(k*chunk, len(gs)), min((k+1)*chunk, len(gs))
			for i := lo; i < hi; i++ {
				if s, z, ok := project(&gs[i], v); ok {
					parts[k] = append(parts[k], s)
					depths[k] = append(depths[k], z)
				}
			}
		}
	})
	var splats []splat2D
	var depth []float32
	for k := range parts {
		splats = append(splats, parts[k]...)
		depth = append(depth, depths[k]...)
	}
	return splats, depth
}

// project projects one Gaussian; ok is false when it is clipped, off the image, or degenerate.
func project(g *gaussian, v *View) (s splat2D, depth float32, ok bool) {
	if g.alpha < minAlpha {
		return s, 0, false
	}
	c := v.toCamera([3]float64{float64(g.pos[0]), float64(g.pos[1]), float64(g.pos[2])})
	x, y, z := c[0], c[1], c[2]
	if !(z >= v.near && z <= v.far) {
		return s, 0, false
	}

	// M = (camera · orientation) · R · S: the Gaussian's axes in camera space; Σ = M·Mᵀ.
	r := quatMatrix([4]float64{float64(g.rot[0]), float64(g.rot[1]), float64(g.rot[2]), float64(g.rot[3])})
	var m [3][3]float64
	for i := range 3 {
		for j := range 3 {
			m[i][j] = (v.m[i][0]*r[0][j] + v.m[i][1]*r[1][j] + v.m[i][2]*r[2][j]) * float64(g.scale[j])
		}
	}

	// The Jacobian of (x, y, z) ↦ (W/2 + f·x/z, H/2 - f·y/z) at the centre, x/z and y/z clamped.
	f := v.focal
	limX := fovClamp * float64(v.Width) / 2 / f
	limY := fovClamp * float64(v.Height) / 2 / f
	tx := min(max(x/z, -limX), limX)
	ty := min(max(y/z, -limY), limY)
	j00, j02 := f/z, -f*tx/z
	j11, j12 := -f/z, f*ty/z
	var t0, t1 [3]float64 // the rows of J·M
	for j := range 3 {
		t0[j] = j00*m[0][j] + j02*m[2][j]
		t1[j] = j11*m[1][j] + j12*m[2][j]
	}
	a := t0[0]*t0[0] + t0[1]*t0[1] + t0[2]*t0[2] + lowPass
	b := t0[0]*t1[0] + t0[1]*t1[1] + t0[2]*t1[2]
	cc := t1[0]*t1[0] + t1[1]*t1[1] + t1[2]*t1[2] + lowPass
	det := a*cc - b*b
	if !(det > 0) || math.IsInf(det, 0) {
		return s, 0, false
	}

	u := float64(v.Width)/2 + f*x/z
	vv := float64(v.Height)/2 - f*y/z
	// The 3σ ellipse's bounding box: ±3·sqrt(Σ'xx) across, ±3·sqrt(Σ'yy) down; clamped in
	// floating point before the integer conversion, which is undefined out of range.
	rx, ry := sigmaCut*math.Sqrt(a), sigmaCut*math.Sqrt(cc)
	clampTo := func(p float64, hi int) int32 { return int32(min(max(p, 0), float64(hi))) }
	s = splat2D{
		u: float32(u), v: float32(vv),
		ca: float32(cc / det), cb: float32(-b / det), cc: float32(a / det),
		rgb: g.rgb, alpha: g.alpha,
		x0: clampTo(math.Floor(u-rx), v.Width), x1: clampTo(math.Ceil(u+rx), v.Width),
		y0: clampTo(math.Floor(vv-ry), v.Height), y1: clampTo(math.Ceil(vv+ry), v.Height),
	}
	if s.x0 >= s.x1 || s.y0 >= s.y1 || !isFinite(u) || !isFinite(vv) {
		return s, 0, false
	}
	return s, float32(z), true
}

// sortByDepth returns the indices of depth in increasing order (an LSD radix sort on the float
// bits, which order like the values for positive floats; stable, so the same input always
// gives the same order).
func sortByDepth(depth []float32) []int32 {
	n := len(depth)
	keys, keys2 := make([]uint32, n), make([]uint32, n)
	idx, idx2 := make([]int32, n), make([]int32, n)
	for i, d := range depth {
		keys[i], idx[i] = math.Float32bits(d), int32(i)
	}
	for shift := 0; shift < 32; shift += 8 {
		var count [257]int
		for _, k := range keys {
			count[(k>>shift)&0xff+1]++
		}
		if n == 0 || count[(keys[0]>>shift)&0xff+1] == n {
			continue // every key has this byte: the pass would change nothing
		}
		for b := 1; b < 257; b++ {
			count[b] += count[b-1]
		}
		for i, k := range keys {
			d := &count[(k>>shift)&0xff]
			keys2[*d], idx2[*d] = k, idx[i]
			*d++
		}
		keys, keys2 = keys2, keys
		idx, idx2 = idx2, idx
	}
	return idx
}
