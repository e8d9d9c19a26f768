package media

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/splathost/splathost/internal/plyfile"
	"io"
	"math"
	"os"
)

// StatPLY reads the header of the PLY file at path and checks that the file holds every record
// the header claims, so that its Vertices can be trusted.
func StatPLY(path string) (plyfile.Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return plyfile.Header{}, err
	}
	defer f.Close()
	return statOpen(f)
}

func statOpen(f *os.File) (plyfile.Header, error) {
	h, err := plyfile.ReadHeader(f)
	if err != nil {
		return plyfile.Header{}, err
	}
	st, err := f.Stat()
	if err != nil {
		return plyfile.Header{}, err
	}
	return h, h.CheckSize(st.Size())
}

// plainPLY is an open Plain PLY of at least one Gaussian whose size holds all its records.
type plainPLY struct {
	f *os.File
	h plyfile.Header
	// n is h.Vertices as an int: bounded by the file's size, so an allocation of a few bytes
	// per Gaussian is bounded by it too.
	n int
	l layout
}

// layout is the byte offsets, in a record, of the properties this package reads.
type layout struct {
	pos, dc, scale [3]int
	rot            [4]int
	opacity        int
}

// openPlain opens the Plain PLY at path; a file that is not Plain is an error telling the
// caller to normalise it first.
func openPlain(path string) (*plainPLY, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	h, err := statOpen(f)
	switch {
	case err != nil:
	case !h.Plain:
		err = fmt.Errorf("ply: %s is not a plain 3DGS PLY (%s): convert it to one with splat-transform first", path, h.NotPlain)
	case h.Vertices < 1:
		err = fmt.Errorf("ply: %s holds no Gaussians", path)
	case h.Vertices > math.MaxInt32:
		err = fmt.Errorf("ply: %s holds %d Gaussians, more than this package handles", path, h.Vertices)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	p := &plainPLY{f: f, h: h, n: int(h.Vertices)}
	for k, c := range "xyz" {
		p.l.pos[k] = h.Offset(string(c))
		p.l.dc[k] = h.Offset(fmt.Sprintf("f_dc_%d", k))
		p.l.scale[k] = h.Offset(fmt.Sprintf("scale_%d", k))
	}
	for k := range p.l.rot {
		p.l.rot[k] = h.Offset(fmt.Sprintf("rot_%d", k))
	}
	p.l.opacity = h.Offset("opacity")
	return p, nil
}

func (p *plainPLY) close() error { return p.f.Close() }

// recordsPerRead is how many records each read fetches: about a megabyte, few syscalls.
const recordsPerRead = 4096

// each hands every record to fn in file order (rec is only valid during the call). Each call
// is a fresh pass from the first record, so a caller may make two.
func (p *plainPLY) each(fn func(i int, rec []byte) error) error {
	stride := p.h.Stride
	r := io.NewSectionReader(p.f, p.h.HeaderLen, int64(p.n)*int64(stride))
	buf := make([]byte, recordsPerRead*stride)
	for i := 0; i < p.n; {
		m := min(recordsPerRead, p.n-i)
		if _, err := io.ReadFull(r, buf[:m*stride]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return fmt.Errorf("ply: the file ends at Gaussian %d of %d (it shrank while being read?)", i, p.n)
			}
			return err
		}
		for j := range m {
			if err := fn(i+j, buf[j*stride:(j+1)*stride]); err != nil {
				return err
			}
		}
		i += m
	}
	return nil
}

// f32 reads the float32 at off of rec.
func f32(rec []byte, off int) float64 {
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(rec[off:])))
}

// checkFinite returns an error naming the first property of rec that is NaN or ±Inf: no 3DGS
// trainer writes one, and it would poison every sum that met it.
func (p *plainPLY) checkFinite(i int, rec []byte) error {
	for off := 0; off < len(rec); off += 4 {
		if !finite(binary.LittleEndian.Uint32(rec[off:])) {
			return fmt.Errorf("ply: Gaussian %d: property %s is %v", i, p.h.Properties[off/4].Name, f32(rec, off))
		}
	}
	return nil
}

// Bounds is an axis-aligned box.
type Bounds struct {
	// Min and Max are the box's corners, Min ≤ Max on each axis.
	Min, Max [3]float64
}

// boundsOf accumulates a scene's bounds as PlayCanvas computes them for a PLY (GSplatData
// calcAabb): every centre grown by twice its largest linear scale on each axis. The viewer
// frames a scene without a camera from these bounds, so the poster must use the same ones.
type boundsOf struct {
	b     Bounds
	empty bool
}

func newBounds() boundsOf {
	inf := math.Inf(1)
	return boundsOf{b: Bounds{Min: [3]float64{inf, inf, inf}, Max: [3]float64{-inf, -inf, -inf}}, empty: true}
}

// add grows the bounds by the Gaussian of record rec.
func (a *boundsOf) add(l *layout, rec []byte) {
	s := 2 * math.Exp(max(f32(rec, l.scale[0]), f32(rec, l.scale[1]), f32(rec, l.scale[2])))
	for k := range 3 {
		c := f32(rec, l.pos[k])
		a.b.Min[k] = min(a.b.Min[k], c-s)
		a.b.Max[k] = max(a.b.Max[k], c+s)
	}
	a.empty = false
}

// result returns the bounds, or an error when a Gaussian's scale overflowed them.
func (a *boundsOf) result() (Bounds, error) {
	for k := range 3 {
		if a.empty || !isFinite(a.b.Min[k]) || !isFinite(a.b.Max[k]) {
			return Bounds{}, errors.New("ply: the scene's bounds are not finite (a Gaussian's log scale overflows)")
		}
	}
	return a.b, nil
}

// PLYBounds returns the bounds of the Plain PLY at path in its own frame, as the viewer
// computes them before turning the scene by its orientation: each centre grown by twice its
// largest scale.
func PLYBounds(path string) (Bounds, error) {
	p, err := openPlain(path)
	if err != nil {
		return Bounds{}, err
	}
	defer p.close()
	acc := newBounds()
	err = p.each(func(i int, rec []byte) error {
		if err := p.checkFinite(i, rec); err != nil {
			return err
		}
		acc.add(&p.l, rec)
		return nil
	})
	if err != nil {
		return Bounds{}, err
	}
	return acc.result()
}

// coverScale is the log-scale offset that keeps a surface covered when only k of n equally
// important Gaussians remain: each then stands for n/k of them, so its area grows n/k-fold
// and each axis by √(n/k). Decimate enlarges by less when it kept the larger ones; this is
// its bound and the poster's rule for the Gaussians it samples.
func coverScale(n, k int) float64 {
	if k <= 0 || k >= n {
		return 0
	}
	return 0.5 * math.Log(float64(n)/float64(k))
}

// ErrNoFiniteGaussians is DropNonFinite's answer for a scene whose every Gaussian holds a NaN or
// an infinity: nothing is left to show.
var ErrNoFiniteGaussians = errors.New("the scene holds no finite Gaussians")

// DropNonFinite writes to dst the Gaussians of the Plain PLY src whose every property
// (position, scale, rotation, opacity, colour, harmonics) is finite, and says how many it kept
// and dropped. No 3DGS trainer writes NaN or ±Inf, but a hostile or broken file may: the
// converter would carry them into a rendition that draws nothing, and decimation and the
// poster refuse them. When nothing is dropped dst is not written (src serves as it is); when
// nothing is kept the error wraps ErrNoFiniteGaussians.
func DropNonFinite(src, dst string) (kept, dropped int, err error) {
	p, err := openPlain(src)
	if err != nil {
		return 0, 0, err
	}
	defer p.close()
	offsets := make([]float32, p.n) // -1: dropped (writeKept's convention); 0: kept unchanged
	err = p.each(func(i int, rec []byte) error {
		if p.checkFinite(i, rec) != nil {
			offsets[i] = -1
			dropped++
		}
		return nil
	})
	switch {
	case err != nil:
		return 0, 0, err
	case dropped == 0:
		return p.n, 0, nil
	case dropped == p.n:
		return 0, dropped, fmt.Errorf("%w: all %d hold NaN or infinite values", ErrNoFiniteGaussians, dropped)
	}
	if err := writeKept(p, dst, p.n-dropped, offsets); err != nil {
		os.Remove(dst)
		return 0, 0, err
	}
	return p.n - dropped, dropped, nil
}
