package scene

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// sniffHeadSize is how many leading bytes of an object sniff needs at most; callers read this
// much (a ranged GET) and pass what they got.
const sniffHeadSize = 64

// Sizes of the .ksplat headers, from GaussianSplats3D's SplatBuffer.js.
const (
	ksplatHeaderSize        = 4096
	ksplatSectionHeaderSize = 1024
)

// sniff reports whether an uploaded object looks like the format its extension ext names,
// from its first bytes (head, up to sniffHeadSize) and its total size. It is a cheap guard
// against wrong or broken uploads before a scene is committed, not a full parse: a file that
// passes may still fail in a viewer, but one that fails would never load. Errors are short
// messages fit for the client.
func sniff(ext string, head []byte, size int64) error {
	check, ok := sniffers[strings.ToLower(ext)]
	if !ok {
		return fmt.Errorf("unsupported file type %q", ext)
	}
	if size < 0 || size < int64(len(head)) {
		return errors.New("file size does not match its content")
	}
	return check(head, size)
}

// sniffers holds one check per extension the upload endpoints accept.
var sniffers = map[string]func(head []byte, size int64) error{
	".ply":    sniffPLY,
	".splat":  sniffSplat,
	".ksplat": sniffKSplat,
	".sog":    sniffSOG,
	".webp":   sniffWebP,
	".json":   sniffJSON,
	".jpg":    sniffJPEG,
	".jpeg":   sniffJPEG,
	".png":    sniffPNG,
	".mp3":    sniffMP3,
	".ogg":    sniffOgg,
}

// Magic numbers of the formats with one; also used to tell a mislabelled file from a .splat,
// which has none.
var (
	magicZip  = []byte("PK\x03\x04")
	magicRIFF = []byte("RIFF")
	magicJPEG = []byte{0xff, 0xd8, 0xff}
	magicPNG  = []byte("\x89PNG\r\n\x1a\n")
)

// sniffPLY: every PLY starts with the line "ply" (LF, or CRLF from some Windows tools).
func sniffPLY(head []byte, _ int64) error {
	if bytes.HasPrefix(head, []byte("ply\n")) || bytes.HasPrefix(head, []byte("ply\r\n")) {
		return nil
	}
	return errors.New("not a PLY file: it must start with \"ply\"")
}

// sniffSplat: .splat has no header, only 32-byte records (float32 position and scale, RGBA
// and rotation bytes), so the size must be a whole number of records. The records in head must
// hold finite numbers and non-negative scales, and head must not carry another format's magic
// or a .ksplat header, which catches most files renamed to .splat.
func sniffSplat(head []byte, size int64) error {
	const record = 32
	if size == 0 || size%record != 0 {
		return fmt.Errorf("not a .splat file: its size must be a non-zero multiple of %d bytes", record)
	}
	for _, m := range [][]byte{[]byte("ply\n"), []byte("ply\r\n"), magicZip, magicRIFF, magicJPEG, magicPNG} {
		if bytes.HasPrefix(head, m) {
			return errors.New("not a .splat file: it holds another format")
		}
	}
	// A .ksplat header read as a record gives denormal coordinates no real scene has, and a
	// .ksplat of 8k splats is a whole number of records.
	if sniffKSplat(head, size) == nil {
		return errors.New("not a .splat file: it holds another format")
	}
	for r := 0; r+record <= len(head); r += record {
		for k := 0; k < 6; k++ {
			v := float64(math.Float32frombits(binary.LittleEndian.Uint32(head[r+4*k:])))
			if math.IsNaN(v) || math.IsInf(v, 0) || k >= 3 && v < 0 {
				return errors.New("not a .splat file: its first splats are not valid")
			}
		}
	}
	return nil
}

// sniffKSplat checks the .ksplat main header as GaussianSplats3D, Spark and splat-transform
// read it: version 0.1 or a later 0.x (bytes 0-1), at least one section (uint32 at 4), at least
// one splat (uint32 at 16), compression level 0-2 (uint16 at 20), and room for the main
// header and every section header.
func sniffKSplat(head []byte, size int64) error {
	if len(head) < 24 {
		return errors.New("not a .ksplat file: too short")
	}
	if head[0] != 0 || head[1] < 1 {
		return fmt.Errorf("not a .ksplat file: unsupported version %d.%d", head[0], head[1])
	}
	sections := int64(binary.LittleEndian.Uint32(head[4:]))
	splats := binary.LittleEndian.Uint32(head[16:])
	level := binary.LittleEndian.Uint16(head[20:])
	switch {
	case sections == 0:
		return errors.New("not a .ksplat file: it has no sections")
	case splats == 0:
		return errors.New("not a .ksplat file: it has no splats")
	case level > 2:
		return fmt.Errorf("not a .ksplat file: unknown compression level %d", level)
	case size < ksplatHeaderSize+sections*ksplatSectionHeaderSize:
		return errors.New("not a .ksplat file: truncated header")
	}
	return nil
}

// sniffSOG: a bundled .sog is a zip, so it starts with a local file header and holds at least
// that header and the end-of-central-directory record.
func sniffSOG(head []byte, size int64) error {
	if !bytes.HasPrefix(head, magicZip) {
		return errors.New("not a .sog file: it must be a zip archive")
	}
	if size < 30+22 {
		return errors.New("not a .sog file: truncated archive")
	}
	return nil
}

// sniffWebP: a RIFF container of form type WEBP whose first chunk is an image (VP8, VP8L or
// VP8X) and whose declared size fits the object; libwebp refuses a file shorter than that.
func sniffWebP(head []byte, size int64) error {
	if len(head) < 16 || !bytes.HasPrefix(head, magicRIFF) || string(head[8:12]) != "WEBP" {
		return errors.New("not a WebP image")
	}
	switch string(head[12:16]) {
	case "VP8 ", "VP8L", "VP8X":
	default:
		return errors.New("not a WebP image: unknown first chunk")
	}
	if riff := int64(binary.LittleEndian.Uint32(head[4:])); riff < 4 || riff+8 > size {
		return errors.New("not a WebP image: truncated")
	}
	return nil
}

// sniffJSON: after optional whitespace (and a UTF-8 byte order mark, which fetch's json()
// strips) JSON metadata starts with an object or array, and text holds no control bytes.
func sniffJSON(head []byte, _ int64) error {
	for _, c := range head {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return errors.New("not a JSON file: it holds binary data")
		}
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(text) == 0 || text[0] != '{' && text[0] != '[' {
		return errors.New("not a JSON file: it must start with '{' or '['")
	}
	return nil
}

// sniffJPEG: SOI marker followed by the start of another marker.
func sniffJPEG(head []byte, _ int64) error {
	if !bytes.HasPrefix(head, magicJPEG) {
		return errors.New("not a JPEG image")
	}
	return nil
}

// sniffPNG: the 8-byte PNG signature.
func sniffPNG(head []byte, _ int64) error {
	if !bytes.HasPrefix(head, magicPNG) {
		return errors.New("not a PNG image")
	}
	return nil
}

// sniffMP3: an MP3 starts with an ID3v2 tag or directly with an MPEG audio frame, whose header
// opens with 11 set sync bits.
func sniffMP3(head []byte, _ int64) error {
	if bytes.HasPrefix(head, []byte("ID3")) || len(head) >= 2 && head[0] == 0xff && head[1]&0xe0 == 0xe0 {
		return nil
	}
	return errors.New("not an MP3 file: it must start with an ID3 tag or an MPEG audio frame")
}

// sniffOgg: every Ogg stream (Vorbis or Opus) starts with the page capture pattern "OggS".
func sniffOgg(head []byte, _ int64) error {
	if bytes.HasPrefix(head, []byte("OggS")) {
		return nil
	}
	return errors.New("not an Ogg file: it must start with \"OggS\"")
}
