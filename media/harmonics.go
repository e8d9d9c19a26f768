package media

import (
	"archive/zip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/splathost/splathost/media/shpalette"
)

// HarmonicsStats is what adding the SH palettes measured.
type HarmonicsStats struct {
	// Gaussians is how many texels got a label, over every SOG written; Unmatched how many of
	// them no Gaussian of the level's PLY could be found for (they decode to the base colour).
	Gaussians, Unmatched int
	// SqErr is the sum of squared differences of the decoded coefficients against the PLY's,
	// over Values coefficients: RMSE gives their root mean. InputSq is the sum of the PLY's
	// coefficients squared: the error of a rendition without harmonics (FlatRMSE).
	SqErr, InputSq float64
	Values         int64
}

// RMSE is the root-mean-square error of the decoded coefficients against the upload's.
func (s HarmonicsStats) RMSE() float64 {
	if s.Values == 0 {
		return 0
	}
	return math.Sqrt(s.SqErr / float64(s.Values))
}

// FlatRMSE is the error a rendition that dropped the harmonics would have: their RMS.
func (s HarmonicsStats) FlatRMSE() float64 {
	if s.Values == 0 {
		return 0
	}
	return math.Sqrt(s.InputSq / float64(s.Values))
}

// measure adds the error of got (decoded coefficients) against want.
func (s *HarmonicsStats) measure(got func(i int) float32, want []float32) {
	for i, w := range want {
		d := float64(got(i)) - float64(w)
		s.SqErr += d * d
		s.InputSq += float64(w) * float64(w)
	}
	s.Values += int64(len(want))
}

func (s *HarmonicsStats) add(o HarmonicsStats) {
	s.Gaussians += o.Gaussians
	s.Unmatched += o.Unmatched
	s.SqErr += o.SqErr
	s.InputSq += o.InputSq
	s.Values += o.Values
}

// sogUnit is one SOG: a bundled .sog (a zip) or a folder of a Streamed SOG (meta.json beside
// its textures). splat-transform orders a SOG's Gaussians its own way (Morton order, after its
// own partition for a Streamed SOG), so a unit's Gaussians are found again by their quantised
// positions, which its means textures hold exactly.
type sogUnit struct {
	zipPath string // the .sog, or "" for a folder
	dir     string // the folder holding meta.json, for a folder unit
	level   int    // which level's PLY the unit's Gaussians come from
	meta    map[string]json.RawMessage
	count   int
	w, h    int
	// keys is each texel's quantised position (x | y<<16 | z<<32); src the level's Gaussian
	// found for it (-1: none).
	keys       []uint64
	mins, maxs [3]float64
	src        []int32
}

// read returns the named files of the unit.
func (u *sogUnit) read(names ...string) ([][]byte, error) {
	out := make([][]byte, len(names))
	if u.zipPath == "" {
		for i, n := range names {
			b, err := os.ReadFile(filepath.Join(u.dir, filepath.FromSlash(n)))
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
		return out, nil
	}
	zr, err := zip.OpenReader(u.zipPath)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	for i, n := range names {
		f, err := zr.Open(n)
		if err != nil {
			return nil, err
		}
		out[i], err = io.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// openUnit reads a unit's meta.json and its means textures.
func openUnit(zipPath, dir string, level int) (*sogUnit, error) {
	u := &sogUnit{zipPath: zipPath, dir: dir, level: level}
	b, err := u.read("meta.json")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b[0], &u.meta); err != nil {
		return nil, fmt.Errorf("sog meta.json: %w", err)
	}
	var m struct {
		Count int `json:"count"`
		Means struct {
			Mins  []float64 `json:"mins"`
			Maxs  []float64 `json:"maxs"`
			Files []string  `json:"files"`
		} `json:"means"`
	}
	if err := json.Unmarshal(b[0], &m); err != nil {
		return nil, fmt.Errorf("sog meta.json: %w", err)
	}
	if len(m.Means.Mins) != 3 || len(m.Means.Maxs) != 3 || len(m.Means.Files) != 2 {
		return nil, errors.New("sog meta.json: no means")
	}
	u.count = m.Count
	copy(u.mins[:], m.Means.Mins)
	copy(u.maxs[:], m.Means.Maxs)
	tex, err := u.read(m.Means.Files...)
	if err != nil {
		return nil, err
	}
	lo, err := shpalette.DecodeWebP(tex[0])
	if err != nil {
		return nil, err
	}
	hi, err := shpalette.DecodeWebP(tex[1])
	if err != nil {
		return nil, err
	}
	u.w, u.h = lo.Bounds().Dx(), lo.Bounds().Dy()
	if u.w*u.h < u.count || hi.Bounds() != lo.Bounds() {
		return nil, errors.New("sog: means textures smaller than count")
	}
	u.keys = make([]uint64, u.count)
	for t := range u.count {
		var k uint64
		for c := range 3 {
			k |= (uint64(lo.Pix[t*4+c]) | uint64(hi.Pix[t*4+c])<<8) << (16 * c)
		}
		u.keys[t] = k
	}
	return u, nil
}

// logPos is splat-transform's position transform before quantisation: sign(v)·ln(|v|+1).
func logPos(v float32) float64 {
	f := float64(v)
	return math.Copysign(math.Log(math.Abs(f)+1), f)
}

// quant is the 16-bit quantised coordinate of l (a logPos) in [lo, hi], as splat-transform
// computes it (truncated toward zero; a flat axis is 0). ok is false well outside the range.
func quant(l, lo, hi float64) (q int64, ok bool) {
	if hi == lo {
		return 0, l == lo
	}
	v := 65535 * (l - lo) / (hi - lo)
	if v < -1 || v > 65536 {
		return 0, false
	}
	return int64(v), true
}

// match finds, for every texel of the units (all of one level), the Gaussian of the level
// whose quantised position it holds: first exactly, each Gaussian used once; then, for texels
// left (a rounding difference of one step, or a twin claimed by a neighbouring unit), any
// Gaussian one step away. lp holds the level's logPos positions, three per Gaussian.
func match(lp []float64, units []*sogUnit) {
	n := len(lp) / 3
	claimed := make([]bool, n)
	keyOf := func(u *sogUnit, g int) (q [3]int64, ok bool) {
		for c := range 3 {
			if q[c], ok = quant(lp[g*3+c], u.mins[c], u.maxs[c]); !ok {
				return q, false
			}
		}
		return q, true
	}
	pack := func(q [3]int64) (uint64, bool) {
		var k uint64
		for c := range 3 {
			if q[c] < 0 || q[c] > 65535 {
				return 0, false
			}
			k |= uint64(q[c]) << (16 * c)
		}
		return k, true
	}
	for _, u := range units {
		u.src = make([]int32, u.count)
		// free[key] is the first unclaimed texel holding key; next chains texels of one key.
		free := make(map[uint64]int32, u.count)
		next := make([]int32, u.count)
		for t := u.count - 1; t >= 0; t-- {
			u.src[t] = -1
			if h, ok := free[u.keys[t]]; ok {
				next[t] = h
			} else {
				next[t] = -1
			}
			free[u.keys[t]] = int32(t)
		}
		for g := range n {
			if claimed[g] {
				continue
			}
			q, ok := keyOf(u, g)
			if !ok {
				continue
			}
			k, ok := pack(q)
			if !ok {
				continue
			}
			if t, ok := free[k]; ok {
				u.src[t], claimed[g] = int32(g), true
				if next[t] >= 0 {
					free[k] = next[t]
				} else {
					delete(free, k)
				}
			}
		}
		if len(free) == 0 {
			continue
		}
		for g := range n {
			q, ok := keyOf(u, g)
			if !ok {
				continue
			}
			for d := range 27 {
				nq := [3]int64{q[0] + int64(d%3) - 1, q[1] + int64(d/3%3) - 1, q[2] + int64(d/9) - 1}
				k, ok := pack(nq)
				if !ok {
					continue
				}
				for t, ok := free[k]; ok && t >= 0; t = next[t] {
					u.src[t] = int32(g)
				}
				delete(free, k)
			}
			if len(free) == 0 {
				break
			}
		}
	}
}

// levelData is one level's PLY as the palettes need it: logPos positions in memory (24 bytes
// a Gaussian); the coefficients (up to 180 bytes a Gaussian) are read from the file for one
// unit at a time, so a 3 M-Gaussian level never holds them all.
type levelData struct {
	path string
	lp   []float64
	rest []int // byte offsets of f_rest_0.. in a record
	dim  int
}

// readLevel reads the positions of a Plain PLY of SH degree degree and finds its f_rest_*.
func readLevel(plyPath string, degree int) (levelData, error) {
	p, err := openPlain(plyPath)
	if err != nil {
		return levelData{}, err
	}
	defer p.close()
	if p.h.SHDegree != degree {
		return levelData{}, fmt.Errorf("ply: %s has SH degree %d, want %d", plyPath, p.h.SHDegree, degree)
	}
	d := levelData{path: plyPath, lp: make([]float64, 3*p.n), rest: make([]int, 3*shpalette.Coefficients(degree))}
	d.dim = len(d.rest)
	for j := range d.rest {
		if d.rest[j] = p.h.Offset(fmt.Sprintf("f_rest_%d", j)); d.rest[j] < 0 {
			return levelData{}, fmt.Errorf("ply: %s has no f_rest_%d", plyPath, j)
		}
	}
	err = p.each(func(i int, rec []byte) error {
		for c, off := range p.l.pos {
			d.lp[i*3+c] = logPos(math.Float32frombits(binary.LittleEndian.Uint32(rec[off:])))
		}
		return nil
	})
	return d, err
}

// rows reads the coefficients of the unit's Gaussians in texel order (zero where unmatched), in
// one pass over the level's file.
func (d levelData) rows(u *sogUnit) ([]float32, error) {
	x := make([]float32, u.count*d.dim)
	// The unit's texels in the order of their Gaussians in the file.
	order := make([]int32, 0, u.count)
	for t, g := range u.src {
		if g >= 0 {
			order = append(order, int32(t))
		}
	}
	sort.Slice(order, func(a, b int) bool { return u.src[order[a]] < u.src[order[b]] })
	if len(order) == 0 {
		return x, nil
	}
	p, err := openPlain(d.path)
	if err != nil {
		return nil, err
	}
	defer p.close()
	next := 0
	err = p.each(func(i int, rec []byte) error {
		for ; next < len(order) && int(u.src[order[next]]) == i; next++ {
			row := x[int(order[next])*d.dim : (int(order[next])+1)*d.dim]
			for j, off := range d.rest {
				row[j] = math.Float32frombits(binary.LittleEndian.Uint32(rec[off:]))
			}
		}
		return nil
	})
	return x, err
}

// addPalette trains the unit's palette from x (its Gaussians' coefficients in texel order) and
// writes it into the unit: the two textures and meta.json's shN entry.
func (u *sogUnit) addPalette(x []float32, degree int) (HarmonicsStats, error) {
	dim := 3 * shpalette.Coefficients(degree)
	pal := shpalette.Train(x, dim, shpalette.Size(u.count), shpalette.Options{Seed: uint64(u.count)})
	enc := shpalette.Quantize(pal)
	st := u.stats()
	st.measure(func(i int) float32 { return enc.Codebook[enc.Codes[int(pal.Labels[i/dim])*dim+i%dim]] }, x)
	cent, err := shpalette.EncodeWebP(enc.CentroidsImage())
	if err != nil {
		return st, err
	}
	labels, err := shpalette.EncodeWebP(shpalette.LabelsImage(pal.Labels, u.w, u.h))
	if err != nil {
		return st, err
	}
	shn, err := json.Marshal(shpalette.Meta{Count: pal.K(), Bands: degree, Codebook: enc.Codebook, Files: shpalette.Files})
	if err != nil {
		return st, err
	}
	u.meta["shN"] = shn
	meta, err := json.Marshal(u.meta)
	if err != nil {
		return st, err
	}
	return st, u.write(map[string][]byte{"meta.json": meta, shpalette.Files[0]: cent, shpalette.Files[1]: labels})
}

// write replaces or adds the named files of the unit: in its folder, or by rewriting its zip
// (every other entry copied as it was).
func (u *sogUnit) write(files map[string][]byte) error {
	if u.zipPath == "" {
		for n, b := range files {
			if err := os.WriteFile(filepath.Join(u.dir, filepath.FromSlash(n)), b, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	zr, err := zip.OpenReader(u.zipPath)
	if err != nil {
		return err
	}
	defer zr.Close()
	tmp := u.zipPath + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw := zip.NewWriter(f)
	for _, e := range zr.File {
		if _, replaced := files[e.Name]; replaced {
			continue
		}
		if err := zw.Copy(e); err != nil {
			f.Close()
			return err
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		// Stored, as splat-transform stores its entries: WebP is compressed already.
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Store})
		if err == nil {
			_, err = w.Write(files[n])
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, u.zipPath)
}

// sogUnits lists the SOGs of a rendition under out: the bundled scene.sog (level 0), or every
// unit lod/lod-meta.json names, with the level each holds (from its tree's leaves).
func sogUnits(out, main string) ([]*sogUnit, error) {
	if path.Ext(main) == ".sog" {
		u, err := openUnit(filepath.Join(out, filepath.FromSlash(main)), "", 0)
		if err != nil {
			return nil, err
		}
		return []*sogUnit{u}, nil
	}
	b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(main)))
	if err != nil {
		return nil, err
	}
	meta, err := ParseLODMeta(b)
	if err != nil {
		return nil, err
	}
	level := meta.FileLevel
	base := path.Dir(main)
	var units []*sogUnit
	for i, name := range meta.Filenames {
		if level[i] < 0 {
			continue
		}
		u, err := openUnit("", filepath.Join(out, filepath.FromSlash(path.Join(base, path.Dir(name)))), level[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		units = append(units, u)
	}
	return units, nil
}

// AddHarmonics writes the spherical-harmonics palette (SOG v2 `shN`) into every SOG of the
// rendition under out whose main file is main (scene.sog or lod/lod-meta.json), which the
// converter wrote without harmonics: levels[i] is the Plain PLY of level i (of SH degree
// degree), whose Gaussians each unit of level i holds.
func AddHarmonics(out, main string, levels []string, degree int) (HarmonicsStats, error) {
	return eachUnit(out, main, levels, degree, func(u *sogUnit, x []float32) (HarmonicsStats, error) {
		return u.addPalette(x, degree)
	})
}

// HarmonicsError decodes the shN palette of every SOG of a rendition (as the PlayCanvas
// engine's reader does) and measures it against the levels' PLYs, found again by position.
// A SOG without shN counts as all-zero coefficients: what a viewer draws of it.
func HarmonicsError(out, main string, levels []string, degree int) (HarmonicsStats, error) {
	return eachUnit(out, main, levels, degree, func(u *sogUnit, x []float32) (HarmonicsStats, error) {
		st := u.stats()
		got, err := u.decodeSH(len(x) / max(u.count, 1))
		if err != nil {
			return st, err
		}
		st.measure(func(i int) float32 { return got[i] }, x)
		return st, nil
	})
}

// eachUnit finds the Gaussians of every SOG of a rendition in its level's PLY and hands fn the
// unit with their coefficients in texel order, one level at a time (so one level's
// coefficients are in memory at once); it sums what fn measures.
func eachUnit(out, main string, levels []string, degree int, fn func(u *sogUnit, x []float32) (HarmonicsStats, error)) (HarmonicsStats, error) {
	var st HarmonicsStats
	units, err := sogUnits(out, main)
	if err != nil {
		return st, err
	}
	for lv, ply := range levels {
		var mine []*sogUnit
		for _, u := range units {
			if u.level == lv {
				mine = append(mine, u)
			}
		}
		if len(mine) == 0 {
			continue
		}
		d, err := readLevel(ply, degree)
		if err != nil {
			return st, err
		}
		match(d.lp, mine)
		for _, u := range mine {
			x, err := d.rows(u)
			if err != nil {
				return st, err
			}
			s, err := fn(u, x)
			if err != nil {
				return st, err
			}
			st.add(s)
			u.keys, u.src = nil, nil
		}
	}
	return st, nil
}

// stats counts the unit's Gaussians and those no Gaussian of its level was found for.
func (u *sogUnit) stats() HarmonicsStats {
	st := HarmonicsStats{Gaussians: u.count}
	for _, g := range u.src {
		if g < 0 {
			st.Unmatched++
		}
	}
	return st
}

// decodeSH returns the unit's decoded coefficients in texel order (zeros without shN).
func (u *sogUnit) decodeSH(dim int) ([]float32, error) {
	raw, ok := u.meta["shN"]
	if !ok {
		return make([]float32, u.count*dim), nil
	}
	var m shpalette.Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if 3*shpalette.Coefficients(m.Bands) != dim || len(m.Files) != 2 {
		return nil, fmt.Errorf("sog shN: %d bands, want %d floats", m.Bands, dim)
	}
	tex, err := u.read(m.Files...)
	if err != nil {
		return nil, err
	}
	imgs := make([]*image.NRGBA, 2)
	for i, b := range tex {
		if imgs[i], err = shpalette.DecodeWebP(b); err != nil {
			return nil, err
		}
	}
	return shpalette.Decode(m, imgs[0], imgs[1], u.count)
}
