// Package plyfile reads the header of a PLY file and checks the body's size against it: the
// 3DGS "Plain" PLY the INRIA trainer writes (one vertex element of float32 properties) and any
// other PLY a client may upload. It is a leaf of the standard library alone, so the scene
// service's commit checks and the media worker's renditions read headers the same way.
package plyfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxHeaderBytes bounds a PLY header: a real one is a few KiB (62 property lines at SH degree
// 3), so a file without end_header in this many bytes is not a scene and is not read further.
const MaxHeaderBytes = 64 << 10

// Property is one property of a PLY element.
type Property struct {
	// Name is the property's name, as in "property float opacity".
	Name string
	// Type is the canonical PLY type name: char, uchar, short, ushort, int, uint, float or
	// double (int8, float32, ... are read as their canonical names). For a list it is the item
	// type.
	Type string
	// List is true for a "property list" (a variable-length record); CountType is then the
	// canonical type of its item count.
	List      bool
	CountType string
	// Offset is the property's byte offset in its element's binary record, or -1 when a list
	// precedes it (the offset then varies).
	Offset int
}

// Element is one element of a PLY header ("element vertex 1000" and its properties).
type Element struct {
	// Name is the element's name ("vertex", "chunk", "face", ...).
	Name string
	// Count is how many records the header claims: untrusted until CheckSize.
	Count int64
	// Properties are the element's properties in order.
	Properties []Property
	// Stride is the size of one binary record, 0 when the element has a list property.
	Stride int
}

// Header is what ReadHeader learns of a PLY file.
type Header struct {
	// Format is "binary_little_endian", "binary_big_endian" or "ascii".
	Format string
	// Elements are all elements in file order.
	Elements []Element
	// Vertices is the count of the "vertex" element (0 when there is none).
	Vertices int64
	// Properties are the vertex element's properties in order.
	Properties []Property
	// HeaderLen is the header's length in bytes, end_header's line included: the vertex
	// records start there when vertex is the first element.
	HeaderLen int64
	// Stride is the size of one vertex record in bytes (0 when it varies).
	Stride int
	// SHDegree is the spherical-harmonics degree (0..3) told by the f_rest_* properties.
	SHDegree int
	// Plain is true for the PLY the 3DGS trainer writes, which Decimate and RenderPoster read
	// directly: binary little-endian, one element "vertex", every property float32, x y z,
	// f_dc_0..2, opacity, scale_0..2, rot_0..3 present and the f_rest_* of a whole SH degree.
	Plain bool
	// NotPlain says why the file is not Plain (empty when it is), for logs.
	NotPlain string
}

// Offset is the byte offset of the named vertex property in a record, or -1 when the vertex
// element has no such property (or its offset varies).
func (h Header) Offset(name string) int {
	for _, p := range h.Properties {
		if p.Name == name {
			return p.Offset
		}
	}
	return -1
}

// CheckSize returns an error unless a file of size bytes holds exactly the records the header
// claims. Check it before trusting Vertices for anything, an allocation above all: a header
// may claim 2^31 vertices in a file of 300 bytes. Binary records of a fixed stride must fill
// the body to the byte (bytes left over mean the header lies about the layout); records with a
// list property, and ASCII records, vary in size, so the body must hold at least their
// smallest form (every list empty; every ASCII value one digit and a separator). The message
// says what the header claims and what the file holds, for the client.
func (h Header) CheckSize(size int64) error {
	body := size - h.HeaderLen
	if body < 0 {
		return fmt.Errorf("ply: the file has %d bytes, fewer than its %d-byte header", size, h.HeaderLen)
	}
	left, exact := body, true
	for _, e := range h.Elements {
		least := e.minRecord(h.Format == "ascii")
		exact = exact && h.Format != "ascii" && !hasList(&e)
		if least == 0 {
			continue
		}
		if e.Count > left/int64(least) { // a division: count × stride may overflow
			what := fmt.Sprintf("%d %s records", e.Count, e.Name)
			if e.Name == "vertex" {
				what = fmt.Sprintf("%d vertices", e.Count)
			}
			return fmt.Errorf("ply: the header claims %s (at least %d bytes each) but the file has %d bytes after its %d-byte header: truncated, or the header's count is wrong",
				what, least, body, h.HeaderLen)
		}
		left -= e.Count * int64(least)
	}
	if exact && left != 0 {
		return fmt.Errorf("ply: the file has %d bytes after the records its header claims (%d bytes after a %d-byte header): the header's counts or properties are wrong",
			left, body-left, h.HeaderLen)
	}
	return nil
}

// minRecord is the fewest bytes one record of e takes: its stride when it is binary with no
// list, otherwise its fixed part plus each list's count (binary) or two bytes a value (ASCII).
func (e *Element) minRecord(ascii bool) int {
	n := 0
	for _, p := range e.Properties {
		switch {
		case ascii:
			n += 2
		case p.List:
			n += plyTypes[p.CountType].size
		default:
			n += plyTypes[p.Type].size
		}
	}
	return n
}

// plyTypes maps every PLY type name to its canonical name and size.
var plyTypes = map[string]struct {
	name string
	size int
}{
	"char": {"char", 1}, "int8": {"char", 1}, "uchar": {"uchar", 1}, "uint8": {"uchar", 1},
	"short": {"short", 2}, "int16": {"short", 2}, "ushort": {"ushort", 2}, "uint16": {"ushort", 2},
	"int": {"int", 4}, "int32": {"int", 4}, "uint": {"uint", 4}, "uint32": {"uint", 4},
	"float": {"float", 4}, "float32": {"float", 4}, "double": {"double", 8}, "float64": {"double", 8},
}

// maxDataBytes bounds the data a header may claim (1 PiB): far above any scene, far below an
// int64 overflow of count × stride.
const maxDataBytes = 1 << 50

var errNotPLY = errors.New(`ply: not a PLY file (the first line is not "ply")`)

// ReadHeader reads a PLY header from r. It reads ahead of the header (at most
// MaxHeaderBytes in all), so a caller that goes on to the records seeks to HeaderLen. A header
// that is not a PLY's, is malformed or has no end_header in MaxHeaderBytes is an error; a
// well-formed PLY that is not the trainer's layout parses with Plain false and NotPlain saying
// why. Nothing is allocated from the counts it claims.
func ReadHeader(r io.Reader) (Header, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxHeaderBytes), 4096)
	var h Header
	var cur *Element
	for lineNo := 1; ; lineNo++ {
		raw, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				if lineNo == 1 && strings.TrimRight(raw, "\r") != "ply" {
					return Header{}, errNotPLY
				}
				if h.HeaderLen+int64(len(raw)) >= MaxHeaderBytes {
					return Header{}, fmt.Errorf("ply: no end_header in the first %d KiB", MaxHeaderBytes>>10)
				}
				return Header{}, errors.New("ply: the file ends inside the header (no end_header)")
			}
			return Header{}, fmt.Errorf("ply: reading the header: %w", err)
		}
		h.HeaderLen += int64(len(raw))
		line := strings.TrimRight(raw, "\r\n")
		if lineNo == 1 {
			if line != "ply" {
				return Header{}, errNotPLY
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "comment", "obj_info":
		case "format":
			if h.Format != "" || len(f) != 3 {
				return Header{}, fmt.Errorf("ply: line %d: bad format line %q", lineNo, line)
			}
			switch f[1] {
			case "binary_little_endian", "binary_big_endian", "ascii":
				h.Format = f[1]
			default:
				return Header{}, fmt.Errorf("ply: line %d: unknown format %q", lineNo, f[1])
			}
		case "element":
			if len(f) != 3 {
				return Header{}, fmt.Errorf("ply: line %d: bad element line %q", lineNo, line)
			}
			n, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil || n < 0 {
				return Header{}, fmt.Errorf("ply: line %d: element %s has a bad count %q", lineNo, f[1], f[2])
			}
			for _, e := range h.Elements {
				if e.Name == f[1] {
					return Header{}, fmt.Errorf("ply: line %d: element %s declared twice", lineNo, f[1])
				}
			}
			h.Elements = append(h.Elements, Element{Name: f[1], Count: n})
			cur = &h.Elements[len(h.Elements)-1]
		case "property":
			if cur == nil {
				return Header{}, fmt.Errorf("ply: line %d: property before any element", lineNo)
			}
			if err := addProperty(cur, f); err != nil {
				return Header{}, fmt.Errorf("ply: line %d: %w", lineNo, err)
			}
		case "end_header":
			if h.Format == "" {
				return Header{}, errors.New("ply: the header has no format line")
			}
			return h.finish()
		default:
			return Header{}, fmt.Errorf("ply: line %d: unexpected header line %q", lineNo, line)
		}
	}
}

// addProperty appends the property of a "property ..." line (split into fields) to e; finish
// lays the records out.
func addProperty(e *Element, f []string) error {
	var p Property
	switch {
	case len(f) == 3:
		t, ok := plyTypes[f[1]]
		if !ok {
			return fmt.Errorf("property %s has unknown type %q", f[2], f[1])
		}
		p = Property{Name: f[2], Type: t.name}
	case len(f) == 5 && f[1] == "list":
		c, okCount := plyTypes[f[2]]
		t, okItem := plyTypes[f[3]]
		if !okCount || !okItem {
			return fmt.Errorf("list property %s has unknown types %q %q", f[4], f[2], f[3])
		}
		p = Property{Name: f[4], Type: t.name, List: true, CountType: c.name}
	default:
		return fmt.Errorf("bad property line %q", strings.Join(f, " "))
	}
	for _, q := range e.Properties {
		if q.Name == p.Name {
			return fmt.Errorf("element %s declares property %s twice", e.Name, p.Name)
		}
	}
	e.Properties = append(e.Properties, p)
	return nil
}

// hasList reports whether e has a list property (variable-length records).
func hasList(e *Element) bool {
	for _, p := range e.Properties {
		if p.List {
			return true
		}
	}
	return false
}

// layout sets the offsets and stride of e's binary records: fixed until the first list.
func (e *Element) layout() {
	off := 0
	for i := range e.Properties {
		p := &e.Properties[i]
		p.Offset = off
		if off < 0 {
			continue
		}
		if p.List {
			off = -1
			continue
		}
		off += plyTypes[p.Type].size
	}
	e.Stride = max(off, 0)
}

// finish fills in the vertex fields, bounds the claimed data and decides Plain.
func (h Header) finish() (Header, error) {
	var total int64
	for i := range h.Elements {
		h.Elements[i].layout()
		e := h.Elements[i]
		if e.Stride > 0 && e.Count > maxDataBytes/int64(e.Stride) {
			return Header{}, fmt.Errorf("ply: element %s claims %d records of %d bytes: more than any scene", e.Name, e.Count, e.Stride)
		}
		total += e.Count * int64(e.Stride)
		if total > maxDataBytes {
			return Header{}, errors.New("ply: the header claims more data than any scene holds")
		}
		if e.Name == "vertex" {
			h.Vertices, h.Properties, h.Stride = e.Count, e.Properties, e.Stride
		}
	}
	if h.Format == "ascii" {
		h.Stride = 0
	}
	degree, why := shDegree(h.Properties)
	h.SHDegree = degree
	if why == "" {
		why = h.plainProblem()
	}
	h.Plain, h.NotPlain = why == "", why
	return h, nil
}

// plainProblem says what keeps h from being Plain, apart from the f_rest_* set.
func (h Header) plainProblem() string {
	if h.Format != "binary_little_endian" {
		return "format " + h.Format + ", not binary_little_endian"
	}
	if len(h.Elements) != 1 || h.Elements[0].Name != "vertex" {
		names := make([]string, len(h.Elements))
		for i, e := range h.Elements {
			names[i] = e.Name
		}
		return "elements [" + strings.Join(names, " ") + "], not vertex alone (a compressed PLY?)"
	}
	for _, p := range h.Properties {
		if p.List || p.Type != "float" {
			return "property " + p.Name + " is not a float32"
		}
	}
	for _, name := range requiredProperties {
		if h.Offset(name) < 0 {
			return "no property " + name
		}
	}
	return ""
}

// requiredProperties are the vertex properties every Plain PLY has.
var requiredProperties = []string{
	"x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity",
	"scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3",
}

// shDegree tells the SH degree from the f_rest_* properties: 0, 9, 24 or 45 of them, named
// f_rest_0 up, are degree 0..3; any other set is a reason the file is not Plain.
func shDegree(props []Property) (int, string) {
	seen := map[int]bool{}
	for _, p := range props {
		if rest, ok := strings.CutPrefix(p.Name, "f_rest_"); ok {
			k, err := strconv.Atoi(rest)
			if err != nil || k < 0 || strconv.Itoa(k) != rest {
				return 0, "property " + p.Name + " is not an SH coefficient"
			}
			seen[k] = true
		}
	}
	for d := 0; d <= 3; d++ {
		if len(seen) == 3*((d+1)*(d+1)-1) {
			for k := range seen {
				if k >= len(seen) {
					return 0, fmt.Sprintf("f_rest_%d is beyond the %d coefficients present", k, len(seen))
				}
			}
			return d, ""
		}
	}
	return 0, fmt.Sprintf("%d f_rest properties make no SH degree 0..3", len(seen))
}
