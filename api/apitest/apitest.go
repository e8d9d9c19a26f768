// Package apitest holds real HTTP answers to the OpenAPI document (api/openapi.yaml): it finds
// the operation a request hit and validates the answer's status, media type and JSON body
// against that operation's response schema, with a JSON Schema 2020-12 validator (the dialect
// of OpenAPI 3.1). Tests use it so the document describes what the service really sends.
package apitest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// docURL names the document inside the schema compiler; schemas are compiled by JSON pointer
// into it, so their $refs to #/components/... resolve in place.
const docURL = "urn:splathost:openapi"

// Methods are the HTTP methods an OpenAPI path item may hold, in the document's order.
var Methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Document is a parsed OpenAPI document with its response schemas compiled on demand.
type Document struct {
	// Raw is the document as JSON values (maps, slices, strings, float64, bool, nil).
	Raw map[string]any
	// Operations lists every documented method and path template.
	Operations []Operation

	compiler *jsonschema.Compiler
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema
}

// Operation is one documented method on one path template.
type Operation struct {
	Method string // upper case
	Path   string // the template, e.g. /api/v1/splats/{splatId}
	segs   []string
}

// Parse reads an OpenAPI document (YAML or JSON).
func Parse(doc []byte) (*Document, error) {
	var y any
	if err := yaml.Unmarshal(doc, &y); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	// Through JSON, so every value has the types a JSON Schema validator expects.
	buf, err := json.Marshal(y)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf))
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	raw, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi: the document is not an object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// Formats (date-time, uri) are part of the answers' contract: check them, not just note them.
	c.AssertFormat()
	if err := c.AddResource(docURL, raw); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	d := &Document{Raw: raw, compiler: c, schemas: map[string]*jsonschema.Schema{}}
	paths, _ := raw["paths"].(map[string]any)
	for p, item := range paths {
		ops, _ := item.(map[string]any)
		for _, m := range Methods {
			if _, ok := ops[m]; ok {
				d.Operations = append(d.Operations, Operation{Method: strings.ToUpper(m), Path: p, segs: strings.Split(p, "/")})
			}
		}
	}
	sort.Slice(d.Operations, func(i, j int) bool {
		a, b := d.Operations[i], d.Operations[j]
		return a.Path < b.Path || a.Path == b.Path && a.Method < b.Method
	})
	return d, nil
}

// Schema compiles the schema at a JSON pointer into the document (e.g.
// /components/schemas/Error), validating it against the JSON Schema 2020-12 metaschema.
func (d *Document) Schema(pointer string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[pointer]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(docURL + "#" + pointer)
	if err != nil {
		return nil, err
	}
	d.schemas[pointer] = s
	return s, nil
}

// Find returns the operation serving method on a concrete path (its query is ignored). A
// literal segment beats a parameter; the last parameter of a template may span several
// segments (a static asset's path below its folder).
func (d *Document) Find(method, path string) (Operation, bool) {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	segs := strings.Split(path, "/")
	best, bestScore := Operation{}, -1
	for _, op := range d.Operations {
		if op.Method != strings.ToUpper(method) {
			continue
		}
		if score, ok := op.match(segs); ok && score > bestScore {
			best, bestScore = op, score
		}
	}
	return best, bestScore >= 0
}

// match scores how well segs fit the template: the count of literal segments, or false.
func (op Operation) match(segs []string) (int, bool) {
	score := 0
	for i, t := range op.segs {
		if i >= len(segs) {
			return 0, false
		}
		if isParam(t) {
			if segs[i] == "" {
				return 0, false
			}
			if i == len(op.segs)-1 && len(segs) > len(op.segs) {
				return score, true // the last parameter takes the rest
			}
			continue
		}
		if t != segs[i] {
			return 0, false
		}
		score++
	}
	return score, len(segs) == len(op.segs)
}

func isParam(seg string) bool { return strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") }

// Check validates one answer: its status must be documented for the operation, its media type
// listed, and a JSON body must match the schema. A request no operation documents is not
// checked here (the route tests hold the routes to the document); ok reports whether one did.
func (d *Document) Check(method, path string, status int, contentType string, body []byte) (ok bool, err error) {
	op, found := d.Find(method, path)
	if !found {
		return false, nil
	}
	where := fmt.Sprintf("%s %s (%s %s) answered %d", method, path, op.Method, op.Path, status)
	ptr := "/paths/" + escape(op.Path) + "/" + strings.ToLower(op.Method) + "/responses"
	responses, _ := d.at(ptr).(map[string]any)
	key := strconv.Itoa(status)
	if _, ok := responses[key]; !ok {
		key = "default"
		if _, ok := responses[key]; !ok {
			return true, fmt.Errorf("%s: status %d is not documented", where, status)
		}
	}
	ptr, resp := d.follow(ptr + "/" + escape(key))
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			return true, fmt.Errorf("%s: the document gives this answer no body, got %q", where, truncate(body))
		}
		return true, nil
	}
	mt, _, perr := mime.ParseMediaType(contentType)
	if perr != nil {
		return true, fmt.Errorf("%s: unreadable Content-Type %q", where, contentType)
	}
	if _, ok := content[mt]; !ok {
		return true, fmt.Errorf("%s: Content-Type %s is not documented (documented: %s)", where, mt, strings.Join(sortedKeys(content), ", "))
	}
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return true, nil
	}
	schema, err := d.Schema(ptr + "/content/" + escape(mt) + "/schema")
	if err != nil {
		return true, fmt.Errorf("%s: the document's schema does not compile: %w", where, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return true, fmt.Errorf("%s: the body is not JSON: %q", where, truncate(body))
	}
	if err := schema.Validate(v); err != nil {
		return true, fmt.Errorf("%s: %v\nbody: %s", where, err, truncate(body))
	}
	return true, nil
}

// CheckErrorCode holds any error envelope ({status: 'error', ...}) to the rule that every error
// answer carries a code of the document's ErrorCode enum, whether or not the request matched a
// documented operation (a wrong path's 404 too). Other answers pass.
func (d *Document) CheckErrorCode(method, path, contentType string, body []byte) error {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/json" {
		return nil
	}
	var env struct {
		Status string  `json:"status"`
		Code   *string `json:"code"`
	}
	if json.Unmarshal(body, &env) != nil || env.Status != "error" {
		return nil
	}
	if env.Code == nil || *env.Code == "" {
		return fmt.Errorf("%s %s: an error envelope without a code: %s", method, path, truncate(body))
	}
	enum, _ := d.at("/components/schemas/ErrorCode/enum").([]any)
	if !slices.Contains(enum, any(*env.Code)) {
		return fmt.Errorf("%s %s: code %q is not in the ErrorCode enum: %s", method, path, *env.Code, truncate(body))
	}
	return nil
}

// at returns the value at a JSON pointer into the document, or nil.
func (d *Document) at(pointer string) any {
	var v any = d.Raw
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[unescape(tok)]
	}
	return v
}

// follow resolves a chain of local $refs from pointer and returns where it ends and the object.
func (d *Document) follow(pointer string) (string, map[string]any) {
	for range 16 { // a loop of $refs is a broken document; give up rather than spin
		obj, _ := d.at(pointer).(map[string]any)
		ref, ok := obj["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			return pointer, obj
		}
		pointer = strings.TrimPrefix(ref, "#")
	}
	return pointer, nil
}

// escape encodes a JSON pointer token (RFC 6901) and then for the URL fragment it travels in.
func escape(tok string) string {
	tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
	return strings.ReplaceAll(url.PathEscape(tok), "%7E", "~")
}

func unescape(tok string) string {
	if u, err := url.PathUnescape(tok); err == nil {
		tok = u
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// sortedKeys lists a map's keys in order, so messages and walks are the same on every run.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// truncate keeps a failure message readable when a body is large.
func truncate(b []byte) string {
	const limit = 2000
	if len(b) > limit {
		return string(b[:limit]) + "…"
	}
	return string(b)
}

// oasSchema is the OpenAPI Initiative's JSON Schema of OpenAPI 3.1 documents (the 2022-10-07
// edition, Apache-2.0), which checks a document's structure; the schemas inside it are checked
// against the JSON Schema 2020-12 metaschema by Schema.
//
//go:embed oas-3.1-schema.json
var oasSchema []byte

// ValidateOpenAPI31 checks the document against the OpenAPI 3.1 schema and compiles every
// schema it holds (components, parameters, request bodies and responses), so a broken $ref or
// an invalid JSON Schema is found before any answer is checked against it.
func (d *Document) ValidateOpenAPI31() error {
	meta, err := jsonschema.UnmarshalJSON(bytes.NewReader(oasSchema))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("urn:oas-3.1-schema", meta); err != nil {
		return err
	}
	s, err := c.Compile("urn:oas-3.1-schema")
	if err != nil {
		return err
	}
	if err := s.Validate(any(d.Raw)); err != nil {
		return fmt.Errorf("not an OpenAPI 3.1 document: %v", err)
	}
	var problems []string
	d.walkSchemas("", d.Raw, func(pointer string) {
		if _, err := d.Schema(pointer); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", pointer, err))
		}
	})
	d.walkRefs("", d.Raw, func(pointer, ref string) {
		if !strings.HasPrefix(ref, "#/") || d.at(strings.TrimPrefix(ref, "#")) == nil {
			problems = append(problems, fmt.Sprintf("%s: $ref %s resolves to nothing", pointer, ref))
		}
	})
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("invalid schemas:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

// walkSchemas calls fn with the pointer of every "schema" object outside components/schemas
// and of every schema under components/schemas; nested subschemas compile with their parent.
func (d *Document) walkSchemas(pointer string, v any, fn func(string)) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if pointer == "/components/schemas" {
		for _, k := range sortedKeys(m) {
			fn(pointer + "/" + escape(k))
		}
		return
	}
	for _, k := range sortedKeys(m) {
		if k == "schema" {
			fn(pointer + "/schema")
			continue
		}
		d.walkSchemas(pointer+"/"+escape(k), m[k], fn)
	}
}

// walkRefs calls fn with every $ref of the document outside the schemas (parameters,
// responses), whose targets the schema compiler never sees.
func (d *Document) walkRefs(pointer string, v any, fn func(pointer, ref string)) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(v) {
			if k == "schema" || pointer == "/components/schemas" {
				continue
			}
			if ref, ok := v[k].(string); ok && k == "$ref" {
				fn(pointer, ref)
				continue
			}
			d.walkRefs(pointer+"/"+escape(k), v[k], fn)
		}
	case []any:
		for i, e := range v {
			d.walkRefs(pointer+"/"+strconv.Itoa(i), e, fn)
		}
	}
}
