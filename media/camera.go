package media

import (
	"errors"
	"fmt"
	"math"
)

// The viewer's conventions (web/embed/src), which a poster must share to show what a visitor
// sees first.
const (
	// DefaultFOV is the viewer's vertical field of view in degrees (orbit.ts DEFAULT_FOV).
	DefaultFOV = 60.0
	// DefaultWidth and DefaultHeight are a poster's default size: 16:9, small enough to
	// render in a second and to serve as a thumbnail.
	DefaultWidth  = 640
	DefaultHeight = 360
)

// DefaultOrientation is the orientation of a scene whose levelData names none (level.ts
// DEFAULT_ROTATION): Euler degrees [180, 0, 0]. 3DGS trainers leave scans y-down (the COLMAP
// camera convention) and half a turn about X stands them upright.
var DefaultOrientation = [3]float64{180, 0, 0}

// DefaultBackground is the viewer's clear colour, rgb(32, 32, 36) (stage.ts CLEAR_RGB, which
// both engines clear to when levelData has no background).
var DefaultBackground = [3]uint8{32, 32, 36}

// Camera is a levelData camera: scene units in the world frame the viewer renders (after the
// scene's orientation), right-handed and Y up.
type Camera struct {
	// Position is where the camera is; it looks at Target, with world Y up.
	Position, Target [3]float64
	// FOV is the vertical field of view in degrees, 1..179; 0 (or anything outside that range,
	// which the viewer ignores too) means DefaultFOV.
	FOV float64
}

// EulerQuat returns the unit quaternion [x, y, z, w] of Euler degrees applied X first, then Y,
// then Z, each about the world's fixed axes (q = qz·qy·qx): levelData.orientation's convention,
// PlayCanvas's setFromEulerAngles, as stage.ts quatFromEuler computes it.
func EulerQuat(deg [3]float64) [4]float64 {
	hx, hy, hz := deg[0]*math.Pi/360, deg[1]*math.Pi/360, deg[2]*math.Pi/360
	sx, cx := math.Sincos(hx)
	sy, cy := math.Sincos(hy)
	sz, cz := math.Sincos(hz)
	return [4]float64{
		sx*cy*cz - cx*sy*sz,
		cx*sy*cz + sx*cy*sz,
		cx*cy*sz - sx*sy*cz,
		cx*cy*cz + sx*sy*sz,
	}
}

// quatMatrix is the rotation matrix of the unit quaternion q = [x, y, z, w].
func quatMatrix(q [4]float64) [3][3]float64 {
	x, y, z, w := q[0], q[1], q[2], q[3]
	return [3][3]float64{
		{1 - 2*(y*y+z*z), 2 * (x*y - w*z), 2 * (x*z + w*y)},
		{2 * (x*y + w*z), 1 - 2*(x*x+z*z), 2 * (y*z - w*x)},
		{2 * (x*z - w*y), 2 * (y*z + w*x), 1 - 2*(x*x+y*y)},
	}
}

func mulVec(m *[3][3]float64, v [3]float64) [3]float64 {
	return [3]float64{
		m[0][0]*v[0] + m[0][1]*v[1] + m[0][2]*v[2],
		m[1][0]*v[0] + m[1][1]*v[1] + m[1][2]*v[2],
		m[2][0]*v[0] + m[2][1]*v[1] + m[2][2]*v[2],
	}
}

// RotateBounds returns the box around b turned by the unit quaternion q (stage.ts
// rotateBounds): the box of its eight turned corners, rounded to 1e-9 as the viewer rounds
// away the float dust of quarter turns.
func RotateBounds(b Bounds, q [4]float64) Bounds {
	m := quatMatrix(q)
	inf := math.Inf(1)
	out := Bounds{Min: [3]float64{inf, inf, inf}, Max: [3]float64{-inf, -inf, -inf}}
	for i := range 8 {
		c := b.Min
		for k := range 3 {
			if i&(1<<k) != 0 {
				c[k] = b.Max[k]
			}
		}
		p := mulVec(&m, c)
		for k := range 3 {
			v := math.Round(p[k]*1e9) / 1e9
			out.Min[k] = min(out.Min[k], v)
			out.Max[k] = max(out.Max[k], v)
		}
	}
	return out
}

// FrameBounds returns the camera the viewer starts with when levelData has none (orbit.ts
// frameBounds): looking at the box's centre from the front (+Z) and 20° above, far enough
// that the box's bounding sphere fits the vertical field of view, with 5% to spare.
func FrameBounds(b Bounds, fov float64) Camera {
	var centre [3]float64
	var r2 float64
	for k := range 3 {
		centre[k] = (b.Min[k] + b.Max[k]) / 2
		h := (b.Max[k] - b.Min[k]) / 2
		r2 += h * h
	}
	radius := max(1e-3, math.Sqrt(r2))
	dist := radius / math.Sin(fov*math.Pi/360) * 1.05
	sp, cp := math.Sincos(20 * math.Pi / 180)
	return Camera{
		Position: [3]float64{centre[0], centre[1] + dist*sp, centre[2] + dist*cp},
		Target:   centre,
		FOV:      fov,
	}
}

// View is a poster's camera: it maps points of the scene, in the scene's own frame as the file
// stores them, to pixels of the image, as the viewer does (stage.ts project: pinhole camera,
// vertical field of view, square pixels, world Y up).
type View struct {
	// Width and Height are the image's size in pixels.
	Width, Height int
	// Camera is the camera used, FOV resolved.
	Camera Camera
	// Orientation is the Euler rotation applied to the scene, in degrees.
	Orientation [3]float64
	// m and t take a scene point to camera coordinates (x right, y up, z forward, the distance
	// in front of the camera): the orientation and the camera's basis in one affine map.
	m         [3][3]float64
	t         [3]float64
	focal     float64 // pixels per unit of x/z (and y/z)
	near, far float64
}

// PosterCamera returns the view RenderPoster renders a scene of bounds b (in its own frame,
// PLYBounds) with under opt: opt's orientation (DefaultOrientation when nil) turns the scene
// about the world origin, and the camera is opt.Camera or, when nil, FrameBounds of the turned
// bounds, as the viewer starts.
func PosterCamera(b Bounds, opt PosterOptions) (View, error) {
	opt, err := opt.resolve()
	if err != nil {
		return View{}, err
	}
	q := EulerQuat(*opt.Orientation)
	cam := FrameBounds(RotateBounds(b, q), DefaultFOV)
	if opt.Camera != nil {
		cam = *opt.Camera
		// The viewer drops a levelData fov outside 1..179 (level.ts readCamera) and shows
		// its default instead; the poster shows what the viewer shows.
		if !(cam.FOV >= 1 && cam.FOV <= 179) {
			cam.FOV = DefaultFOV
		}
	}
	for k := range 3 {
		if !isFinite(cam.Position[k]) || !isFinite(cam.Target[k]) {
			return View{}, fmt.Errorf("media: the camera is not finite: %+v", cam)
		}
	}

	// The camera's basis (stage.ts basis): forward to the target, right = forward × Y, and
	// looking straight up or down any right will do.
	var fwd [3]float64
	for k := range 3 {
		fwd[k] = cam.Target[k] - cam.Position[k]
	}
	dist := math.Sqrt(fwd[0]*fwd[0] + fwd[1]*fwd[1] + fwd[2]*fwd[2])
	if !(dist > 1e-9) {
		return View{}, errors.New("media: the camera's position is its target: it looks nowhere")
	}
	fwd = scale3(fwd, 1/dist)
	right := [3]float64{-fwd[2], 0, fwd[0]} // forward × (0, 1, 0)
	if math.Hypot(right[0], right[2]) < 1e-9 {
		right = [3]float64{1, 0, 0}
	}
	right = scale3(right, 1/math.Hypot(right[0], right[2]))
	up := [3]float64{
		right[1]*fwd[2] - right[2]*fwd[1],
		right[2]*fwd[0] - right[0]*fwd[2],
		right[0]*fwd[1] - right[1]*fwd[0],
	}

	v := View{Width: opt.Width, Height: opt.Height, Camera: cam, Orientation: *opt.Orientation}
	orient := quatMatrix(q)
	basis := [3][3]float64{right, up, fwd}
	for r := range 3 {
		for c := range 3 {
			v.m[r][c] = basis[r][0]*orient[0][c] + basis[r][1]*orient[1][c] + basis[r][2]*orient[2][c]
		}
		v.t[r] = -(basis[r][0]*cam.Position[0] + basis[r][1]*cam.Position[1] + basis[r][2]*cam.Position[2])
	}
	v.focal = float64(opt.Height) / 2 / math.Tan(cam.FOV*math.Pi/360)
	// The clip planes PlayCanvas's camera gets in engine-playcanvas.ts.
	v.near = max(1e-3, dist/1000)
	v.far = max(100, dist*100)
	return v, nil
}

func scale3(v [3]float64, s float64) [3]float64 { return [3]float64{v[0] * s, v[1] * s, v[2] * s} }

// toCamera returns the camera coordinates of the scene point p.
func (v *View) toCamera(p [3]float64) [3]float64 {
	c := mulVec(&v.m, p)
	return [3]float64{c[0] + v.t[0], c[1] + v.t[1], c[2] + v.t[2]}
}

// Project returns where the scene point p (in the scene's own frame) lands in the image, in
// pixels from the top-left corner (a pixel's centre is at +0.5), and whether it lies within the
// camera's clip range (x and y mean nothing otherwise).
func (v *View) Project(p [3]float64) (x, y float64, ok bool) {
	c := v.toCamera(p)
	if !(c[2] >= v.near && c[2] <= v.far) {
		return 0, 0, false
	}
	return float64(v.Width)/2 + v.focal*c[0]/c[2], float64(v.Height)/2 - v.focal*c[1]/c[2], true
}
