package scene

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
)

// sniffBytes sniffs a whole file the way commit does: only its first 64 bytes and its size.
func sniffBytes(ext string, b []byte) error {
	return sniff(ext, b[:min(len(b), sniffHeadSize)], int64(len(b)))
}

var sniffExts = []string{".ply", ".splat", ".ksplat", ".sog", ".webp", ".json", ".jpg", ".jpeg", ".png"}

// TestSniffFixtures checks that every generated file passes for its own extension and fails for
// every other one.
func TestSniffFixtures(t *testing.T) {
	lod := fixtures.LODFolder(100)
	tests := []struct {
		name string
		data []byte
		exts []string // the extensions it must pass for
	}{
		{"ply 1", fixtures.PLY(1), []string{".ply"}},
		{"ply 1000", fixtures.PLY(1000), []string{".ply"}},
		{"splat 1", fixtures.Splat(1), []string{".splat"}},
		{"splat 1000", fixtures.Splat(1000), []string{".splat"}},
		{"ksplat 1", fixtures.KSplat(1), []string{".ksplat"}},
		{"ksplat 1000", fixtures.KSplat(1000), []string{".ksplat"}},
		{"sog 1", fixtures.SOG(1), []string{".sog"}},
		{"sog 1000", fixtures.SOG(1000), []string{".sog"}},
		{"lod manifest", lod[fixtures.LODManifest], []string{".json"}},
		{"lod unit meta", lod["0_0/meta.json"], []string{".json"}},
		{"lod cell", lod["0_0/means_l.webp"], []string{".webp"}},
		{"webp 1x1", fixtures.WebP(1, 1), []string{".webp"}},
		{"webp thumbnail", fixtures.WebP(320, 180), []string{".webp"}},
		{"jpeg", fixtures.JPEG(320, 180), []string{".jpg", ".jpeg"}},
		{"png", fixtures.PNG(320, 180), []string{".png"}},
	}
	for _, tc := range tests {
		for _, ext := range sniffExts {
			t.Run(tc.name+" as "+ext, func(t *testing.T) {
				err := sniffBytes(ext, tc.data)
				if slices.Contains(tc.exts, ext) {
					require.NoError(t, err)
				} else {
					require.Error(t, err)
				}
			})
		}
	}
}

// TestSniffSeeds runs the cross-format check over many seeds and sizes: a .splat has no magic
// and JSON is recognised by its first byte, so a lucky float must not make a file pass as
// another format.
func TestSniffSeeds(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		g := fixtures.Gen{Seed: seed}
		n := int(1 + seed*37)
		files := map[string][]byte{
			".ply": g.PLY(n), ".splat": g.Splat(n), ".ksplat": g.KSplat(n), ".sog": g.SOG(n),
			".webp": g.WebP(int(1+seed), 3), ".png": g.PNG(3, int(1+seed)), ".jpg": g.JPEG(4, 4),
		}
		for own, data := range files {
			for _, ext := range sniffExts {
				err := sniffBytes(ext, data)
				if ext == own || own == ".jpg" && ext == ".jpeg" {
					require.NoError(t, err, "seed %d: %s as %s", seed, own, ext)
				} else {
					require.Error(t, err, "seed %d: %s as %s", seed, own, ext)
				}
			}
		}
	}
}

// ksplatHeader builds a .ksplat main header with the given fields, the rest zero.
func ksplatHeader(major, minor byte, sections, splats uint32, level uint16) []byte {
	h := make([]byte, 64)
	h[0], h[1] = major, minor
	binary.LittleEndian.PutUint32(h[4:], sections)
	binary.LittleEndian.PutUint32(h[8:], sections)
	binary.LittleEndian.PutUint32(h[12:], splats)
	binary.LittleEndian.PutUint32(h[16:], splats)
	binary.LittleEndian.PutUint16(h[20:], level)
	return h
}

// splatRecord builds one .splat record with the given position and scale.
func splatRecord(pos, scale float32) []byte {
	r := make([]byte, 32)
	for k := 0; k < 3; k++ {
		binary.LittleEndian.PutUint32(r[4*k:], math.Float32bits(pos))
		binary.LittleEndian.PutUint32(r[12+4*k:], math.Float32bits(scale))
	}
	copy(r[24:], []byte{255, 0, 0, 255, 255, 128, 128, 128})
	return r
}

// webpHeader builds the first 16 bytes of a RIFF file with the given declared size, form and
// first chunk.
func webpHeader(riffSize uint32, form, chunk string) []byte {
	h := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, riffSize)...)
	return append(append(h, form...), chunk...)
}

// TestSniffRejects covers truncated, garbage and mislabelled inputs, and the accepted edge cases
// next to them.
func TestSniffRejects(t *testing.T) {
	ksplat := fixtures.KSplat(10)
	webp := fixtures.WebP(8, 8)
	tests := []struct {
		name string
		ext  string
		head []byte
		size int64
		ok   bool
	}{
		{"unknown extension", ".txt", []byte("ply\n"), 4, false},
		{"no extension", "", []byte("ply\n"), 4, false},
		{"extension without dot", "ply", []byte("ply\n"), 4, false},
		{"upper-case extension", ".PLY", []byte("ply\nformat ascii 1.0\n"), 100, true},
		{"size smaller than head", ".ply", []byte("ply\nformat ascii 1.0\n"), 3, false},
		{"negative size", ".splat", nil, -32, false},

		{"ply", ".ply", []byte("ply\nformat binary_little_endian 1.0\n"), 1000, true},
		{"ply with CRLF", ".ply", []byte("ply\r\nformat ascii 1.0\r\n"), 1000, true},
		{"ply without newline", ".ply", []byte("ply"), 3, false},
		{"ply upper case", ".ply", []byte("PLY\n"), 100, false},
		{"empty ply", ".ply", nil, 0, false},
		{"ply with leading space", ".ply", []byte(" ply\n"), 100, false},

		{"splat zeros", ".splat", make([]byte, 64), 64, true},
		{"splat one record", ".splat", splatRecord(1, 0.01), 32, true},
		{"splat empty", ".splat", nil, 0, false},
		{"splat truncated record", ".splat", make([]byte, 33), 33, false},
		{"splat short file", ".splat", make([]byte, 31), 31, false},
		{"splat NaN position", ".splat", splatRecord(float32(math.NaN()), 0.01), 32, false},
		{"splat infinite position", ".splat", splatRecord(float32(math.Inf(1)), 0.01), 32, false},
		{"splat negative scale", ".splat", splatRecord(0, -1), 32, false},
		{"splat that is a PLY", ".splat", append([]byte("ply\n"), make([]byte, 60)...), 64, false},
		{"splat that is a zip", ".splat", append([]byte("PK\x03\x04"), make([]byte, 60)...), 64, false},

		{"ksplat fixture", ".ksplat", ksplat[:64], int64(len(ksplat)), true},
		{"ksplat later minor", ".ksplat", ksplatHeader(0, 2, 1, 5, 1), 8192, true},
		{"ksplat compression 2", ".ksplat", ksplatHeader(0, 1, 1, 5, 2), 8192, true},
		{"ksplat truncated to the header", ".ksplat", ksplat[:64], ksplatHeaderSize, false},
		{"ksplat shorter than the header", ".ksplat", ksplat[:64], ksplatHeaderSize - 1, false},
		{"ksplat short head", ".ksplat", ksplat[:20], 20, false},
		{"ksplat version 0.0", ".ksplat", ksplatHeader(0, 0, 1, 5, 0), 8192, false},
		{"ksplat version 1.0", ".ksplat", ksplatHeader(1, 0, 1, 5, 0), 8192, false},
		{"ksplat no sections", ".ksplat", ksplatHeader(0, 1, 0, 5, 0), 8192, false},
		{"ksplat no splats", ".ksplat", ksplatHeader(0, 1, 1, 0, 0), 8192, false},
		{"ksplat compression 3", ".ksplat", ksplatHeader(0, 1, 1, 5, 3), 8192, false},
		{"ksplat more sections than bytes", ".ksplat", ksplatHeader(0, 1, 4, 5, 0), 8191, false},
		{"ksplat zeros", ".ksplat", make([]byte, 64), 8192, false},

		{"sog", ".sog", []byte("PK\x03\x04\x14\x00"), 1000, true},
		{"sog truncated", ".sog", []byte("PK\x03\x04"), 4, false},
		{"sog empty zip", ".sog", []byte("PK\x05\x06"), 22, false},
		{"sog gzip", ".sog", []byte{0x1f, 0x8b, 8, 0}, 1000, false},

		{"webp fixture", ".webp", webp[:16], int64(len(webp)), true},
		{"webp lossy chunk", ".webp", webpHeader(100, "WEBP", "VP8 "), 108, true},
		{"webp extended", ".webp", webpHeader(100, "WEBP", "VP8X"), 108, true},
		{"webp with trailing bytes", ".webp", webpHeader(100, "WEBP", "VP8L"), 200, true},
		{"webp truncated", ".webp", webp[:16], int64(len(webp)) - 1, false},
		{"webp wave", ".webp", webpHeader(100, "WAVE", "fmt "), 108, false},
		{"webp unknown chunk", ".webp", webpHeader(100, "WEBP", "ALPH"), 108, false},
		{"webp tiny riff size", ".webp", webpHeader(2, "WEBP", "VP8L"), 108, false},
		{"webp short head", ".webp", []byte("RIFF\x04\x00\x00\x00WEBP"), 12, false},

		{"json object", ".json", []byte(`{"version":1}`), 13, true},
		{"json array", ".json", []byte(`[1,2]`), 5, true},
		{"json after whitespace", ".json", []byte(" \r\n\t{}"), 6, true},
		{"json after BOM", ".json", []byte("\xef\xbb\xbf{}"), 5, true},
		{"json utf-8 cut mid-character", ".json", []byte("{\"t\":\"\xc3"), 100, true},
		{"json empty", ".json", nil, 0, false},
		{"json whitespace only", ".json", []byte("   "), 3, false},
		{"json scalar", ".json", []byte(`"text"`), 6, false},
		{"json binary after brace", ".json", []byte("{\x00\x01"), 3, false},
		{"json html", ".json", []byte("<html>"), 6, false},

		{"jpeg", ".jpg", []byte{0xff, 0xd8, 0xff, 0xe0}, 1000, true},
		{"jpeg alias", ".jpeg", []byte{0xff, 0xd8, 0xff, 0xdb}, 1000, true},
		{"jpeg two bytes", ".jpg", []byte{0xff, 0xd8}, 2, false},
		{"jpeg bad marker", ".jpg", []byte{0xff, 0xd8, 0x00}, 1000, false},

		{"png", ".png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), 1000, true},
		{"png seven bytes", ".png", []byte("\x89PNG\r\n\x1a"), 7, false},
		{"png LF-mangled", ".png", []byte("\x89PNG\n\x1a\n"), 1000, false},

		{"mp3 with an ID3 tag", ".mp3", []byte("ID3\x04\x00\x00"), 1000, true},
		{"mp3 starting with a frame", ".mp3", []byte{0xff, 0xfb, 0x90, 0x64}, 1000, true},
		{"mp3 one byte", ".mp3", []byte{0xff}, 1, false},
		{"mp3 no sync", ".mp3", []byte{0xff, 0x1b, 0x90}, 1000, false},
		{"mp3 that is a wav", ".mp3", []byte("RIFF\x00\x00\x00\x00WAVE"), 1000, false},
		{"ogg", ".ogg", []byte("OggS\x00\x02"), 1000, true},
		{"ogg that is an mp3", ".ogg", []byte("ID3\x04"), 1000, false},
		{"ogg cut short", ".ogg", []byte("Ogg"), 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sniff(tc.ext, tc.head, tc.size)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			// The message goes to the client after "field: ": short, one line, lower case.
			msg := err.Error()
			require.NotEmpty(t, msg)
			require.Less(t, len(msg), 80, msg)
			require.NotContains(t, msg, "\n")
			require.Equal(t, strings.ToLower(msg[:1]), msg[:1], msg)
		})
	}
}

// TestSniffGarbage feeds deterministic noise under every extension: nothing passes except
// .splat, which has no magic number and can only be rejected by its size or its floats.
func TestSniffGarbage(t *testing.T) {
	state := uint64(42)
	for i := 0; i < 200; i++ {
		head := make([]byte, sniffHeadSize)
		for j := range head {
			state = state*6364136223846793005 + 1442695040888963407
			head[j] = byte(state >> 56)
		}
		for _, ext := range sniffExts {
			if ext == ".splat" {
				continue
			}
			require.Error(t, sniff(ext, head, 1<<20), fmt.Sprintf("noise %d as %s", i, ext))
		}
		require.Error(t, sniff(".splat", head, 1<<20+1), "noise %d as .splat of odd size", i)
	}
}
