package apitest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splathost/splathost/api"
)

// Direction says which way a Go type crosses the wire, which decides what "matches" means.
type Direction int

const (
	// Decoded types read answers (or webhook bodies): every documented property has a field
	// and every field a documented property, and a property that may be null has a field that
	// can hold null (a pointer, map, slice or interface), so nothing the service sends is lost.
	Decoded Direction = iota
	// Encoded types are written: request bodies, or a service's answers. Every field is a
	// documented property, a required property has a field, a field sent always (no omitempty
	// or omitzero) is a required property and a required property is sent always, and a field
	// that may send null is documented as nullable.
	Encoded
)

// WireType pairs a Go type with the schema it must match.
type WireType struct {
	// Value is a value of the Go type (a zero value will do).
	Value any
	// Pointer is the schema's JSON pointer, e.g. /components/schemas/ExternalUser.
	Pointer string
	Dir     Direction
	// Skip names properties the Go type leaves out on purpose (the envelope's status, read by
	// the client itself), each with no path: they are skipped at the top level only.
	Skip []string
	// Allow names deliberate differences by JSON path (as the problems name them, e.g.
	// splats[].levelData), each with the reason. An allowance that matches nothing is itself a
	// problem, so none outlives its reason.
	Allow map[string]string
}

// CompareType holds a Go type's JSON fields to a schema of the document, field by field:
// names, JSON types (recursing into structs, slices and maps), nullability and required-ness
// as w.Dir defines them. It returns one line per mismatch, named by the JSON path.
func (d *Document) CompareType(w WireType) []string {
	c := &comparer{d: d, dir: w.Dir}
	if d.at(w.Pointer) == nil {
		return []string{w.Pointer + ": no schema there"}
	}
	c.compare(reflect.TypeOf(w.Value), c.shape(d.at(w.Pointer)), "", w.Skip)
	var out []string
	used := map[string]bool{}
	for _, p := range c.problems {
		path, _, _ := strings.Cut(p, ": ")
		if _, ok := w.Allow[path]; ok {
			used[path] = true
			continue
		}
		out = append(out, p)
	}
	for _, path := range sortedKeys(w.Allow) {
		if !used[path] {
			out = append(out, path+": allowed a difference, but there is none")
		}
	}
	return out
}

// RequireWireTypes fails t with every mismatch between the types and their schemas in the
// product's document (api.Document), one subtest per type.
func RequireWireTypes(t *testing.T, types ...WireType) {
	t.Helper()
	doc, err := Parse(api.Document)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range types {
		t.Run(strings.TrimLeft(reflect.TypeOf(w.Value).String(), "*"), func(t *testing.T) {
			if problems := doc.CompareType(w); len(problems) > 0 {
				t.Errorf("against %s:\n%s", w.Pointer, strings.Join(problems, "\n"))
			}
		})
	}
}

type comparer struct {
	d        *Document
	dir      Direction
	problems []string
}

func (c *comparer) fail(path, format string, args ...any) {
	if path == "" {
		path = "(root)"
	}
	c.problems = append(c.problems, path+": "+fmt.Sprintf(format, args...))
}

// shape is a schema node flattened: $refs followed, allOf merged, oneOf/anyOf and type lists
// read as the set of JSON types they allow.
type shape struct {
	types    map[string]bool // empty: anything
	props    map[string]any
	required map[string]bool
	items    any // array items' schema
	values   any // additionalProperties' schema, for maps
}

func (s *shape) allows(t string) bool { return len(s.types) == 0 || s.types[t] }

func (c *comparer) shape(node any) *shape {
	s := &shape{types: map[string]bool{}, props: map[string]any{}, required: map[string]bool{}}
	c.merge(s, node, 0)
	return s
}

func (c *comparer) merge(s *shape, node any, depth int) {
	m, ok := node.(map[string]any)
	if !ok || depth > 16 {
		return
	}
	if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
		c.merge(s, c.d.at(strings.TrimPrefix(ref, "#")), depth+1)
	}
	switch t := m["type"].(type) {
	case string:
		s.types[t] = true
	case []any:
		for _, x := range t {
			s.types[fmt.Sprint(x)] = true
		}
	}
	if v, ok := m["const"]; ok && m["type"] == nil {
		s.types[jsonType(v)] = true
	}
	if e, ok := m["enum"].([]any); ok && m["type"] == nil {
		for _, v := range e {
			s.types[jsonType(v)] = true
		}
	}
	for _, key := range []string{"allOf", "oneOf", "anyOf"} {
		for _, sub := range asList(m[key]) {
			c.merge(s, sub, depth+1)
		}
	}
	if p, ok := m["properties"].(map[string]any); ok {
		for k, v := range p {
			if prev, ok := s.props[k]; ok { // allOf refinements: keep both
				v = map[string]any{"allOf": []any{prev, v}}
			}
			s.props[k] = v
		}
	}
	for _, r := range asList(m["required"]) {
		s.required[fmt.Sprint(r)] = true
	}
	if it, ok := m["items"]; ok {
		s.items = it
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		s.values = ap
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// field is one JSON member of a struct.
type field struct {
	name  string
	typ   reflect.Type
	omit  bool // omitempty or omitzero
	depth int
}

// jsonFields lists a struct's JSON members as encoding/json sees them: embedded structs
// without a tag are flattened, and a shallower field hides a deeper one of the same name.
func jsonFields(t reflect.Type, depth int) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type, depth+1)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
		out = append(out, field{name: name, typ: f.Type, omit: omit, depth: depth})
	}
	if depth > 0 {
		return out
	}
	best := map[string]field{}
	for _, f := range out {
		if b, ok := best[f.name]; !ok || f.depth < b.depth {
			best[f.name] = f
		}
	}
	out = out[:0]
	for _, f := range best {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b field) int { return strings.Compare(a.name, b.name) })
	return out
}

// nullable reports whether a value of t can hold (or send) JSON null, and the type of its
// value otherwise. An SDK three-state type (a struct with a Get() (T, bool) method and an
// IsZero) is nullable with T inside.
func nullable(t reflect.Type) (reflect.Type, bool) {
	switch t.Kind() {
	case reflect.Pointer:
		return t.Elem(), true
	case reflect.Map, reflect.Slice, reflect.Interface:
		return t, true
	}
	if g, ok := t.MethodByName("Get"); ok && t.Kind() == reflect.Struct && g.Type.NumOut() == 2 {
		return g.Type.Out(0), true
	}
	return t, false
}

func (c *comparer) compare(t reflect.Type, s *shape, path string, skip []string) {
	if t.Kind() != reflect.Struct || t == timeType {
		c.fail(path, "the Go type %s is not a struct", t)
		return
	}
	if !s.allows("object") {
		c.fail(path, "the schema is no object")
	}
	seen := map[string]bool{}
	for _, f := range jsonFields(t, 0) {
		seen[f.name] = true
		p := join(path, f.name)
		sub, ok := s.props[f.name]
		if !ok {
			c.fail(p, "the Go field is not in the schema")
			continue
		}
		if c.dir == Encoded && s.required[f.name] == f.omit {
			c.fail(p, "required in the schema is %v, but the Go field is sent always is %v", s.required[f.name], !f.omit)
		}
		c.value(f, c.shape(sub), p)
	}
	for name := range s.props {
		if seen[name] || path == "" && slices.Contains(skip, name) {
			continue
		}
		switch {
		case c.dir == Decoded:
			c.fail(join(path, name), "documented, but the Go type has no field for it")
		case s.required[name]:
			c.fail(join(path, name), "required, but the Go type has no field for it")
		}
	}
}

// value compares one field's Go type with its property's shape.
func (c *comparer) value(f field, s *shape, path string) {
	inner, canNull := nullable(f.typ)
	sendsNull := canNull && !f.omit
	if _, three := f.typ.MethodByName("IsZero"); three && f.typ.Kind() == reflect.Struct && canNull {
		sendsNull = true // Null() is sent as null on purpose
	}
	switch {
	case c.dir == Decoded && s.types["null"] && !canNull:
		c.fail(path, "may be null, but %s cannot hold null", f.typ)
	case c.dir == Encoded && sendsNull && !s.types["null"]:
		c.fail(path, "the Go field may send null, which the schema does not allow")
	}
	c.kind(inner, s, path)
}

// kind compares a Go type (its nullability already handled) with a shape's JSON types.
func (c *comparer) kind(t reflect.Type, s *shape, path string) {
	want := ""
	switch {
	case t == timeType:
		want = "string"
	case t == rawType || t.Kind() == reflect.Interface:
		return // any JSON
	case t.Kind() == reflect.String:
		want = "string"
	case t.Kind() == reflect.Bool:
		want = "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		want = "integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		want = "number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		want = "array"
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		want = "object"
	default:
		c.fail(path, "the Go type %s has no JSON counterpart here", t)
		return
	}
	nonNull := 0
	for ty := range s.types {
		if ty != "null" {
			nonNull++
		}
	}
	if !s.allows(want) || (nonNull > 1 && !(want == "number" && nonNull == 2 && s.types["integer"])) {
		c.fail(path, "the Go type %s is JSON %s; the schema allows %v", t, want, sortedKeys(s.types))
		return
	}
	switch want {
	case "array":
		if s.items != nil {
			elem, _ := nullable(t.Elem())
			c.kind(elem, c.shape(s.items), path+"[]")
		}
	case "object":
		if t.Kind() == reflect.Struct {
			c.compare(t, s, path, nil)
		} else if s.values != nil && t.Key().Kind() == reflect.String {
			elem, _ := nullable(t.Elem())
			c.kind(elem, c.shape(s.values), path+"{}")
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
