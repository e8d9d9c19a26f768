package media

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
)

// LODCoarsest is the Gaussian count of a Streamed SOG's coarsest level unless the pipeline is
// told otherwise: small enough that the level, the whole scene in one file, is at most 100 KB
// with every harmonic band (80 KB at degree 3 on the standing scene), so a viewer draws all of
// the scene after that little; PlayCanvas's own streamed example goes down to 1 873.
const LODCoarsest = 2000

// maxLODRatio is the most Gaussians a level may hold per Gaussian of the next coarser one: a
// viewer refines a part of the scene one level at a time, so fewer, wider steps reach full
// detail in fewer fetches and fewer bytes (about 1.4 times level 0 in all, where halving costs
// 2); PlayCanvas's streamed examples step about as wide.
const maxLODRatio = 4

// LODLevels returns the Gaussian counts of the levels of detail below the full scene (levels
// 1, 2, ...) for a scene of n Gaussians: a geometric series from n down to exactly coarsest,
// in as few steps as keep each level at most 4 times the next, so the steps are even. A scene
// of no more than coarsest Gaussians gets none. LODLevels(1_000_000, 2_000) is [288540 83255
// 24022 6931 2000]. Level 0, the scene itself, is not listed.
func LODLevels(n int, coarsest int) []int {
	coarsest = max(coarsest, 1)
	if n <= coarsest {
		return nil
	}
	span := float64(n) / float64(coarsest)
	steps := int(math.Ceil(math.Log(span)/math.Log(maxLODRatio) - 1e-9))
	ratio := math.Pow(span, 1/float64(steps))
	out := make([]int, 0, steps)
	for i := 1; i < steps; i++ {
		out = append(out, int(math.Round(float64(n)/math.Pow(ratio, float64(i)))))
	}
	return append(out, coarsest)
}

// keptPerCell is how many Gaussians each cell of the decimation grid keeps on average: small
// enough that the choice is even at the scale of a few cells, large enough that the rounding
// of each cell's share to whole Gaussians stays a small part of it.
const keptPerCell = 8

// Decimate writes to dst a Plain PLY of keep of the Gaussians of the Plain PLY src (all of them
// when it has no more than keep), with the same properties, spherical harmonics included, and
// returns how many it wrote. It streams src twice and holds about 24 bytes per Gaussian.
//
// The choice is deterministic (the same src and keep give the same bytes, so a retried
// activity rewrites the same file), spatially even and favours the Gaussians that show most:
//
//   - Even: the scene is cut into a grid of about keep/8 cells over its 1st to 99th
//     percentiles (outliers join the edge cells), and each cell keeps its share of keep,
//     n_cell·keep/n, rounded with the error carried from cell to cell so that the total is
//     exactly keep. Dense regions keep as many as they had in proportion, none goes empty.
//   - Important: within a cell the Gaussians are drawn by weighted sampling without
//     replacement (Efraimidis–Spirakis keys u^(1/w), u from a hash of the Gaussian's index),
//     the weight w being its opacity (sigmoid) times the area of its largest cross-section
//     (the product of its two largest scales): faint and tiny Gaussians mostly go, yet a cell
//     of only small ones still keeps some.
//   - Covered: the kept Gaussians of a cell are enlarged (the same offset added to their three
//     log scales) so that together they carry the opacity-weighted area all of the cell's
//     Gaussians had, at most what equal Gaussians would need (each axis √(n_cell/kept_cell)
//     larger): the surface stays covered instead of going see-through.
func Decimate(src, dst string, keep int) (int, error) {
	if keep < 1 {
		return 0, fmt.Errorf("media: keep must be at least 1, got %d", keep)
	}
	if same, err := sameFile(src, dst); err != nil || same {
		if err == nil {
			err = fmt.Errorf("media: decimate %s onto itself", src)
		}
		return 0, err
	}
	p, err := openPlain(src)
	if err != nil {
		return 0, err
	}
	defer p.close()

	offsets := make([]float32, p.n) // per Gaussian: its log-scale offset, or -1 when dropped
	if keep >= p.n {
		keep = p.n // all of them, unchanged: offsets stay 0
		err = p.each(p.checkFinite)
	} else {
		err = choose(p, keep, offsets)
	}
	if err != nil {
		return 0, err
	}
	if err := writeKept(p, dst, keep, offsets); err != nil {
		os.Remove(dst)
		return 0, err
	}
	return keep, nil
}

// sameFile reports whether dst already names the file src (writing would truncate it).
func sameFile(src, dst string) (bool, error) {
	a, err := os.Stat(src)
	if err != nil {
		return false, err
	}
	b, err := os.Stat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}

// choose reads p once and sets offsets[i] to the log-scale offset of each kept Gaussian and -1
// for the others; exactly keep are kept.
func choose(p *plainPLY, keep int, offsets []float32) error {
	n := p.n
	pos := make([]float32, 3*n)
	logw := make([]float32, n) // log of the sampling weight
	err := p.each(func(i int, rec []byte) error {
		if err := p.checkFinite(i, rec); err != nil {
			return err
		}
		var s [3]float64
		for k := range 3 {
			pos[3*i+k] = float32(f32(rec, p.l.pos[k]))
			s[k] = f32(rec, p.l.scale[k])
		}
		logw[i] = float32(logSigmoid(f32(rec, p.l.opacity)) + s[0] + s[1] + s[2] - min(s[0], s[1], s[2]))
		return nil
	})
	if err != nil {
		return err
	}

	g := newGrid(pos, max(1, keep/keptPerCell))
	order, start := g.group(pos)

	type cand struct {
		key float64
		i   int32
	}
	var members []cand
	allocated := 0
	for c := 0; c+1 < len(start); c++ {
		cell := order[start[c]:start[c+1]]
		for _, i := range cell {
			offsets[i] = -1
		}
		target := int(math.Round(float64(start[c+1]) * float64(keep) / float64(n)))
		q := min(max(target-allocated, 0), len(cell))
		allocated += q
		if q == 0 {
			continue
		}
		members = members[:0]
		top := math.Inf(-1)
		for _, i := range cell {
			// Efraimidis–Spirakis: the largest u^(1/w) is the smallest ln(-ln u) - ln w.
			members = append(members, cand{math.Log(-math.Log(unitHash(uint64(i)))) - float64(logw[i]), i})
			top = max(top, float64(logw[i]))
		}
		slices.SortFunc(members, func(a, b cand) int {
			return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.i, b.i))
		})
		var all, kept float64 // weights relative to the cell's largest, which cannot overflow
		for j, m := range members {
			w := math.Exp(float64(logw[m.i]) - top)
			all += w
			if j < q {
				kept += w
			}
		}
		off := min(0.5*math.Log(all/kept), coverScale(len(cell), q))
		if !(off > 0) { // also NaN from a cell of weights that all underflowed
			off = 0
		}
		for _, m := range members[:q] {
			offsets[m.i] = float32(off)
		}
	}
	return nil
}

// logSigmoid is ln(1/(1+e^-x)) without overflow for large |x|.
func logSigmoid(x float64) float64 {
	if x >= 0 {
		return -math.Log1p(math.Exp(-x))
	}
	return x - math.Log1p(math.Exp(x))
}

// unitHash maps i to a uniform number in (0, 1) (splitmix64's finaliser): the same on every run,
// unlike a seeded generator shared across goroutines or Go versions.
func unitHash(i uint64) float64 {
	z := i*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return (float64(z>>11) + 0.5) / (1 << 53)
}

// grid is the decimation's cells: a box cut into dims[0]×dims[1]×dims[2] cells.
type grid struct {
	lo, size [3]float64
	dims     [3]int
}

// newGrid fits a grid of about cells cells to the 1st to 99th percentiles of the positions
// (xyz triples) on each axis, estimated from an even sample of at most 65 536: a few distant
// floaters must not leave the scene itself in one cell. Axes much thinner than the widest
// (a flat scene) get one cell.
func newGrid(pos []float32, cells int) grid {
	n := len(pos) / 3
	step := max(1, n/65536)
	var g grid
	var ext [3]float64
	vals := make([]float64, 0, n/step+1)
	for k := range 3 {
		vals = vals[:0]
		for i := 0; i < n; i += step {
			vals = append(vals, float64(pos[3*i+k]))
		}
		slices.Sort(vals)
		cut := len(vals) / 100
		g.lo[k] = vals[cut]
		ext[k] = vals[len(vals)-1-cut] - vals[cut]
	}
	widest := max(ext[0], ext[1], ext[2])
	vol, active := 1.0, 0
	for k := range 3 {
		if ext[k] > widest*1e-3 {
			vol *= ext[k]
			active++
		}
	}
	side := math.Pow(vol/float64(cells), 1/float64(max(active, 1)))
	for k := range 3 {
		g.dims[k] = 1
		if active > 0 && ext[k] > widest*1e-3 {
			g.dims[k] = int(min(1024, max(1, math.Ceil(ext[k]/side))))
		}
		g.size[k] = max(ext[k], 1e-30) / float64(g.dims[k])
	}
	return g
}

// cell is the index of the cell holding the position at p, the edge cells taking what lies
// outside.
func (g *grid) cell(p []float32) int {
	c := 0
	for k := 2; k >= 0; k-- {
		v := int(min(max((float64(p[k])-g.lo[k])/g.size[k], 0), float64(g.dims[k]-1)))
		c = c*g.dims[k] + v
	}
	return c
}

// group sorts the Gaussians' indices by cell (a counting sort, stable: by index within a
// cell); the cell c holds order[start[c]:start[c+1]].
func (g *grid) group(pos []float32) (order []int32, start []int) {
	n := len(pos) / 3
	start = make([]int, g.dims[0]*g.dims[1]*g.dims[2]+1)
	for i := range n {
		start[g.cell(pos[3*i:])+1]++
	}
	for c := 1; c < len(start); c++ {
		start[c] += start[c-1]
	}
	next := slices.Clone(start[:len(start)-1])
	order = make([]int32, n)
	for i := range n {
		c := g.cell(pos[3*i:])
		order[next[c]] = int32(i)
		next[c]++
	}
	return order, start
}

// writeKept writes dst: p's header with the vertex count kept, then each record whose offset
// is not negative, that offset added to its log scales.
func writeKept(p *plainPLY, dst string, kept int, offsets []float32) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("ply\nformat binary_little_endian 1.0\nelement vertex " + strconv.Itoa(kept) + "\n")
	for _, prop := range p.h.Properties {
		w.WriteString("property float " + prop.Name + "\n")
	}
	w.WriteString("end_header\n")
	out := make([]byte, p.h.Stride)
	err = p.each(func(i int, rec []byte) error {
		off := offsets[i]
		if off < 0 {
			return nil
		}
		copy(out, rec)
		if off > 0 {
			for _, o := range p.l.scale {
				binary.LittleEndian.PutUint32(out[o:], math.Float32bits(float32(f32(rec, o)+float64(off))))
			}
		}
		_, err := w.Write(out)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
