package media

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"path"
	"sort"
	"strconv"

	"golang.org/x/image/webp"

	"github.com/splathost/splathost/media/shpalette"
)

// A .sog upload or a LOD folder (Streamed SOG) gets no rendition, being compact already, but
// it gets a poster like every other scene. The rasteriser reads Plain PLYs, so the SOG is
// decoded into one first, as splat-transform's reader and the PlayCanvas engine decode it
// (SOG v2: 16-bit log-space positions, smallest-three quaternions, codebook scales and
// colours, opacity as a sigmoid byte). The harmonics are left out: the poster draws only the
// base colour.

// SOGFiles reads a file of one SOG by its name relative to the SOG's meta.json.
type SOGFiles func(name string) ([]byte, error)

// SOGPart is a run of one SOG's Gaussians: texels Offset up to Offset+Count of its textures,
// or all of them when Count is negative (a whole .sog).
type SOGPart struct {
	Files         SOGFiles
	Offset, Count int
}

// maxSOGFile bounds one file a poster reads of a SOG: a meta.json is kilobytes and a texture
// of 16 million Gaussians tens of megabytes, so only a hostile file reaches it.
const maxSOGFile = 512 << 20

// maxSOGTexels bounds a SOG texture's size before it is decoded (4 bytes a texel): 64 Mi
// texels is far beyond any scene the service takes.
const maxSOGTexels = 1 << 26

// OpenSOGZip opens the bundled .sog at p and returns its reader of entries (each read whole,
// at most maxSOGFile bytes) and the func that closes it.
func OpenSOGZip(p string) (SOGFiles, func() error, error) {
	zr, err := zip.OpenReader(p)
	if err != nil {
		return nil, nil, &InputError{Err: fmt.Errorf("sog: not a zip: %w", err)}
	}
	read := func(name string) ([]byte, error) {
		f, err := zr.Open(name)
		if err != nil {
			return nil, &InputError{Err: fmt.Errorf("sog: %w", err)}
		}
		defer f.Close()
		// The declared size is checked before inflating: archive/zip stops an entry at it, so a
		// bomb is refused without reading it.
		if st, err := f.Stat(); err == nil && st.Size() > maxSOGFile {
			return nil, badSOG("sog: %s inflates to %d bytes, more than %d", name, st.Size(), maxSOGFile)
		}
		b, err := ReadSOGFile(f, name)
		if err != nil {
			// The archive is a local file: whatever fails reading it is the file's fault.
			return nil, &InputError{Err: err}
		}
		return b, nil
	}
	return read, zr.Close, nil
}

// ReadSOGFile reads r, the SOG file name, whole, refusing more than maxSOGFile bytes (an
// *InputError).
func ReadSOGFile(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSOGFile+1))
	if err != nil {
		return nil, fmt.Errorf("sog: reading %s: %w", name, err)
	}
	if len(b) > maxSOGFile {
		return nil, &InputError{Err: fmt.Errorf("sog: %s holds more than %d bytes", name, maxSOGFile)}
	}
	return b, nil
}

// badSOG is an error of the SOG's content: the input's fault, never retried.
func badSOG(format string, a ...any) error {
	return &InputError{Err: fmt.Errorf(format, a...)}
}

// PosterLevel reads a LOD folder's lod-meta.json and picks the level its poster is drawn from:
// the finest whose Gaussians are at most budget (the poster samples no more), or the coarsest
// when none is. It returns the level, its runs in the tree's order and its Gaussian count.
func PosterLevel(manifest []byte, budget int) (level int, runs []LODRun, gaussians int64, err error) {
	meta, err := ParseLODMeta(manifest)
	if err != nil {
		return 0, nil, 0, err
	}
	sums := meta.Sums
	if len(sums) == 0 {
		return 0, nil, 0, badSOG("lod-meta.json: the tree holds no Gaussians")
	}
	levels := make([]int, 0, len(sums))
	for lv := range sums {
		levels = append(levels, lv)
	}
	sort.Ints(levels)
	// The finest that fits, else the smallest (the coarsest, whatever its number).
	pick := -1
	for _, lv := range levels {
		if sums[lv] <= int64(budget) {
			pick = lv
			break
		}
	}
	if pick < 0 {
		pick = levels[0]
		for _, lv := range levels {
			if sums[lv] < sums[pick] {
				pick = lv
			}
		}
	}
	return pick, meta.Runs[pick], sums[pick], nil
}

// sogMeta is what a poster reads of a SOG v2 meta.json.
type sogMeta struct {
	Version int `json:"version"`
	Count   int `json:"count"`
	Means   struct {
		Mins  []float64 `json:"mins"`
		Maxs  []float64 `json:"maxs"`
		Files []string  `json:"files"`
	} `json:"means"`
	Scales struct {
		Codebook []float64 `json:"codebook"`
		Files    []string  `json:"files"`
	} `json:"scales"`
	Quats struct {
		Files []string `json:"files"`
	} `json:"quats"`
	Sh0 struct {
		Codebook []float64 `json:"codebook"`
		Files    []string  `json:"files"`
	} `json:"sh0"`
}

// check refuses a meta.json a reader could not decode.
func (m *sogMeta) check() error {
	switch {
	case m.Version != 2:
		return badSOG("sog meta.json: version %d (only version 2 is read)", m.Version)
	case m.Count < 1 || m.Count > maxSOGTexels:
		return badSOG("sog meta.json: count %d", m.Count)
	case len(m.Means.Mins) != 3 || len(m.Means.Maxs) != 3 || len(m.Means.Files) != 2:
		return badSOG("sog meta.json: means need 3 mins, 3 maxs and 2 files")
	case len(m.Scales.Codebook) != shpalette.CodebookSize || len(m.Scales.Files) != 1:
		return badSOG("sog meta.json: scales need a 256-value codebook and 1 file")
	case len(m.Sh0.Codebook) != shpalette.CodebookSize || len(m.Sh0.Files) != 1:
		return badSOG("sog meta.json: sh0 needs a 256-value codebook and 1 file")
	case len(m.Quats.Files) != 1:
		return badSOG("sog meta.json: quats need 1 file")
	}
	for _, v := range append(append(append(append([]float64{}, m.Means.Mins...), m.Means.Maxs...), m.Scales.Codebook...), m.Sh0.Codebook...) {
		if !isFinite(v) {
			return badSOG("sog meta.json: a bound or codebook value is not finite")
		}
	}
	return nil
}

// sogTexture reads and decodes one texture of a SOG, refusing one smaller than count texels
// or larger than maxSOGTexels before decoding it.
func sogTexture(files SOGFiles, name string, count int) (*image.NRGBA, error) {
	b, err := files(name)
	if err != nil {
		return nil, err
	}
	cfg, err := webp.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, badSOG("sog: %s: %w", name, err)
	}
	if n := cfg.Width * cfg.Height; n < count || n > maxSOGTexels {
		return nil, badSOG("sog: %s is %dx%d texels for %d Gaussians", name, cfg.Width, cfg.Height, count)
	}
	img, err := shpalette.DecodeWebP(b)
	if err != nil {
		return nil, badSOG("sog: %s: %w", name, err)
	}
	return img, nil
}

// texel returns the 4 bytes of texel i (row-major) of img.
func texel(img *image.NRGBA, i int) []byte {
	w := img.Bounds().Dx()
	o := (i/w)*img.Stride + (i%w)*4
	return img.Pix[o : o+4]
}

// plainProps are the properties of the Plain PLY a SOG is decoded into, in record order.
var plainProps = []string{"x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity",
	"scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"}

// WriteSOGPLY decodes parts, in order, into the Plain PLY dst (no harmonics) and returns how
// many Gaussians it holds. Each part's textures are decoded one kind at a time, so memory
// stays at two textures plus the records.
func WriteSOGPLY(dst string, parts []SOGPart) (int64, error) {
	type run struct {
		meta          sogMeta
		files         SOGFiles
		offset, count int
	}
	runs := make([]run, 0, len(parts))
	var total int64
	for _, p := range parts {
		b, err := p.Files("meta.json")
		if err != nil {
			return 0, err
		}
		var m sogMeta
		if err := json.Unmarshal(b, &m); err != nil {
			return 0, badSOG("sog meta.json: %w", err)
		}
		if err := m.check(); err != nil {
			return 0, err
		}
		off, n := p.Offset, p.Count
		if n < 0 {
			off, n = 0, m.Count
		}
		if off < 0 || off+n > m.Count {
			return 0, badSOG("sog: rows %d+%d beyond its %d Gaussians", off, n, m.Count)
		}
		runs = append(runs, run{meta: m, files: p.Files, offset: off, count: n})
		total += int64(n)
	}
	if total < 1 {
		return 0, badSOG("the scene holds no Gaussians")
	}
	if total > maxSOGTexels {
		return 0, badSOG("sog: %d Gaussians, more than a poster reads", total)
	}

	f, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	hdr := "ply\nformat binary_little_endian 1.0\nelement vertex " + strconv.FormatInt(total, 10) + "\n"
	for _, p := range plainProps {
		hdr += "property float " + p + "\n"
	}
	if _, err := w.WriteString(hdr + "end_header\n"); err != nil {
		return 0, err
	}
	for _, r := range runs {
		recs, err := decodeSOGRun(r.meta, r.files, r.offset, r.count)
		if err != nil {
			return 0, err
		}
		if err := binary.Write(w, binary.LittleEndian, recs); err != nil {
			return 0, err
		}
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	return total, f.Close()
}

// decodeSOGRun decodes rows offset..offset+count of a SOG into records of plainProps, as
// splat-transform's readSog does.
func decodeSOGRun(m sogMeta, files SOGFiles, offset, count int) ([]float32, error) {
	const stride = 14
	out := make([]float32, count*stride)
	need := offset + count

	lo, err := sogTexture(files, m.Means.Files[0], need)
	if err != nil {
		return nil, err
	}
	hi, err := sogTexture(files, m.Means.Files[1], need)
	if err != nil {
		return nil, err
	}
	for i := range count {
		l, h := texel(lo, offset+i), texel(hi, offset+i)
		for c := range 3 {
			span := m.Means.Maxs[c] - m.Means.Mins[c]
			if span == 0 {
				span = 1 // splat-transform's reader: a flat axis decodes to its min
			}
			v := m.Means.Mins[c] + span*float64(uint16(l[c])|uint16(h[c])<<8)/65535
			out[i*stride+c] = float32(math.Copysign(math.Exp(math.Abs(v))-1, v))
		}
	}
	lo, hi = nil, nil

	sh0, err := sogTexture(files, m.Sh0.Files[0], need)
	if err != nil {
		return nil, err
	}
	for i := range count {
		t := texel(sh0, offset+i)
		for c := range 3 {
			out[i*stride+3+c] = float32(m.Sh0.Codebook[t[c]])
		}
		// The inverse sigmoid, clamped as the reader clamps it: a 0 or 255 byte stays finite.
		a := min(max(float64(t[3])/255, 1e-6), 1-1e-6)
		out[i*stride+6] = float32(math.Log(a / (1 - a)))
	}
	sh0 = nil

	scales, err := sogTexture(files, m.Scales.Files[0], need)
	if err != nil {
		return nil, err
	}
	for i := range count {
		t := texel(scales, offset+i)
		for c := range 3 {
			out[i*stride+7+c] = float32(m.Scales.Codebook[t[c]])
		}
	}
	scales = nil

	quats, err := sogTexture(files, m.Quats.Files[0], need)
	if err != nil {
		return nil, err
	}
	for i := range count {
		q := unpackQuat(texel(quats, offset+i))
		copy(out[i*stride+10:i*stride+14], q[:])
	}
	return out, nil
}

// unpackQuat decodes a smallest-three quaternion texel into rot_0..rot_3 (w x y z): the alpha
// byte 252+k names the largest component k, rebuilt positive from the other three, which are
// stored as (v·√2 + 1)/2 in bytes. A texel without the tag decodes as the identity, as the
// reader does.
func unpackQuat(t []byte) [4]float32 {
	if t[3] < 252 {
		return [4]float32{1, 0, 0, 0}
	}
	largest := int(t[3]) - 252
	var q [4]float32
	j, sum := 0, 0.0
	for k := range 4 {
		if k == largest {
			continue
		}
		v := (float64(t[j])/255*2 - 1) / math.Sqrt2
		q[k] = float32(v)
		sum += v * v
		j++
	}
	q[largest] = float32(math.Sqrt(max(0, 1-sum)))
	return q
}

// SOGPoster renders the poster of a scene stored as SOG (parts: the whole .sog, or the runs of
// a LOD folder's PosterLevel) as RenderPoster renders a PLY, decoding it into a Plain PLY under
// work first. It returns the JPEG's local path and how many Gaussians it was drawn from. An
// error of the input is an *InputError; one of parts' Files is returned as it is.
func SOGPoster(parts []SOGPart, work string, opt PosterOptions) (string, int64, error) {
	plain := path.Join(work, "sog-plain.ply")
	n, err := WriteSOGPLY(plain, parts)
	if err != nil {
		return "", 0, err
	}
	jpg, err := RenderPoster(plain, opt)
	if err != nil {
		return "", 0, &InputError{Err: err}
	}
	out := path.Join(work, "poster.jpg")
	return out, n, os.WriteFile(out, jpg, 0o600)
}
