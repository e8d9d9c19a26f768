package shpalette

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"math"
	"slices"
	"sort"

	libwebp "github.com/gen2brain/webp"
	"golang.org/x/image/webp"
)

// webpMethod is libwebp's effort (0-6): 4 is its default; more costs seconds per million
// texels for a few per cent.
const webpMethod = 4

// CodebookSize is the number of values the SOG's 8-bit codebook holds.
const CodebookSize = 256

// Files are the shN textures' names in a SOG, centroids first (the order meta.json lists them).
var Files = []string{"shN_centroids.webp", "shN_labels.webp"}

// Meta is a SOG v2 meta.json's shN entry, as the PlayCanvas engine and Spark read it: count
// palette entries (labels at or above it decode as zero), bands 1..3, the codebook every
// centroid byte indexes, and the two texture files.
type Meta struct {
	Count    int       `json:"count"`
	Bands    int       `json:"bands"`
	Codebook []float32 `json:"codebook"`
	Files    []string  `json:"files"`
}

// Encoded is a palette quantised to the SOG's codebook: Codes holds K×Dim bytes, each
// centroid's coefficients in f_rest order.
type Encoded struct {
	Dim      int
	Codebook []float32
	Codes    []uint8
}

// Quantize maps every centroid value to one of 256 shared codebook values, chosen by a 1-D
// k-means over all of them (the least squared error a single codebook allows).
func Quantize(p Palette) Encoded {
	vals := slices.Clone(p.Centroids)
	slices.Sort(vals)
	book := make([]float64, CodebookSize)
	if len(vals) == 0 {
		return Encoded{Dim: p.Dim, Codebook: make([]float32, CodebookSize)}
	}
	// Prefix sums make each Lloyd step O(codebook · log values).
	pre := make([]float64, len(vals)+1)
	for i, v := range vals {
		pre[i+1] = pre[i] + float64(v)
	}
	for c := range book {
		book[c] = float64(vals[(2*c+1)*len(vals)/(2*CodebookSize)])
	}
	for range 30 {
		lo := 0
		for c := range book {
			hi := len(vals)
			if c+1 < len(book) {
				mid := float32((book[c] + book[c+1]) / 2)
				hi = sort.Search(len(vals), func(i int) bool { return vals[i] > mid })
			}
			if hi > lo {
				book[c] = (pre[hi] - pre[lo]) / float64(hi-lo)
			}
			lo = max(lo, hi)
		}
		slices.Sort(book)
	}
	e := Encoded{Dim: p.Dim, Codebook: make([]float32, CodebookSize), Codes: make([]uint8, len(p.Centroids))}
	for c, v := range book {
		e.Codebook[c] = float32(v)
	}
	for i, v := range p.Centroids {
		e.Codes[i] = nearestCode(e.Codebook, v)
	}
	return e
}

// nearestCode is the index of book's value nearest v (book ascending).
func nearestCode(book []float32, v float32) uint8 {
	i := sort.Search(len(book), func(i int) bool { return book[i] >= v })
	switch {
	case i == 0:
		return 0
	case i == len(book):
		return uint8(len(book) - 1)
	case v-book[i-1] <= book[i]-v:
		return uint8(i - 1)
	}
	return uint8(i)
}

// CentroidsImage is the shN_centroids texture: 64 centroids per row, each centroid's
// coefficients in consecutive texels, a texel's RGB the codes of the red, green and blue
// channel's coefficient.
func (e Encoded) CentroidsImage() *image.NRGBA {
	coeffs := e.Dim / 3
	k := len(e.Codes) / e.Dim
	img := image.NewNRGBA(image.Rect(0, 0, 64*coeffs, (k+63)/64))
	for i := range k {
		row := e.Codes[i*e.Dim : (i+1)*e.Dim]
		for j := range coeffs {
			px := img.Pix[(i*coeffs+j)*4:]
			px[0], px[1], px[2], px[3] = row[j], row[j+coeffs], row[j+2*coeffs], 0xff
		}
	}
	return img
}

// LabelsImage is the shN_labels texture of a SOG whose textures are w×h: texel t holds the
// 16-bit label of the Gaussian at t, little-endian in R and G (what is beyond the labels is
// left zero, as splat-transform leaves it).
func LabelsImage(labels []uint16, w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for t, l := range labels {
		px := img.Pix[t*4:]
		px[0], px[1], px[2], px[3] = uint8(l), uint8(l>>8), 0, 0xff
	}
	return img
}

// EncodeWebP encodes img as a lossless WebP (the SOG's textures must survive bit-exact) with
// libwebp, the encoder splat-transform uses too, run as WebAssembly in this process (or the
// system's libwebp.so when one is installed).
func EncodeWebP(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	if err := libwebp.Encode(&b, img, libwebp.Options{Lossless: true, Exact: true, Method: webpMethod}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// DecodeWebP decodes a lossless WebP into NRGBA texels.
func DecodeWebP(data []byte) (*image.NRGBA, error) {
	img, err := webp.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if n, ok := img.(*image.NRGBA); ok {
		return n, nil
	}
	b := img.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			out.Set(x, y, img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return out, nil
}

// Decode rebuilds the coefficients of the first count Gaussians (count×3×Coefficients(bands)
// floats, f_rest order) from a SOG's shN entry and its decoded textures, the way the PlayCanvas
// engine's reader does: label → centroid row and column → codebook value per channel.
func Decode(m Meta, centroids, labels *image.NRGBA, count int) ([]float32, error) {
	if m.Bands < 1 || m.Bands > 3 {
		return nil, fmt.Errorf("shN: bands %d", m.Bands)
	}
	if len(m.Codebook) != CodebookSize {
		return nil, fmt.Errorf("shN: codebook of %d values, want %d", len(m.Codebook), CodebookSize)
	}
	coeffs := Coefficients(m.Bands)
	cw, ch := centroids.Bounds().Dx(), centroids.Bounds().Dy()
	if cw != 64*coeffs {
		return nil, fmt.Errorf("shN: centroids texture %d wide, want %d", cw, 64*coeffs)
	}
	if labels.Bounds().Dx()*labels.Bounds().Dy() < count {
		return nil, errors.New("shN: labels texture smaller than count")
	}
	dim := 3 * coeffs
	out := make([]float32, count*dim)
	for t := range count {
		label := int(labels.Pix[t*4]) | int(labels.Pix[t*4+1])<<8
		if label >= m.Count || label/64 >= ch {
			continue // decodes as zero, as the engine's reader does
		}
		row := out[t*dim : (t+1)*dim]
		for j := range coeffs {
			px := centroids.Pix[((label/64)*cw+(label%64)*coeffs+j)*4:]
			row[j] = m.Codebook[px[0]]
			row[j+coeffs] = m.Codebook[px[1]]
			row[j+2*coeffs] = m.Codebook[px[2]]
		}
	}
	return out, nil
}

// RMSE is the root-mean-square difference of two coefficient arrays of one length.
func RMSE(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return math.NaN()
	}
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}
