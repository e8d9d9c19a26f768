package httpx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/splathost/splathost/internal/apperr"
)

// Fields is a JSON object body decoded field by field, so that every problem is reported as an
// issue naming its field, an omitted field can be told from an explicit null, and unknown
// fields are caught.
type Fields struct {
	raw    map[string]json.RawMessage
	issues []string
}

// DecodeObject parses body as one JSON object. An empty body is an empty object when
// emptyOK, since every field of some bodies is optional.
func DecodeObject(body []byte, emptyOK bool) (*Fields, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		if emptyOK {
			return &Fields{raw: map[string]json.RawMessage{}}, nil
		}
		return nil, apperr.Invalid("invalid JSON body", "body: must be a JSON object")
	}
	if trimmed[0] != '{' {
		return nil, apperr.Invalid("invalid JSON body", "body: must be a JSON object")
	}
	// A well-formed body (nearly every one) is decoded in one pass without a Decoder, whose
	// buffer and refills were a third of a minted session's body parsing; the Decoder below only
	// runs to word the problem of a body Unmarshal refused. The values stay raw, so UseNumber has
	// nothing to change here.
	var raw map[string]json.RawMessage
	if json.Unmarshal(trimmed, &raw) != nil {
		raw = nil
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			return nil, apperr.Invalid("invalid JSON body", "body: "+jsonProblem(err))
		}
		// dec.More is false before a stray '}' or ']', so check that nothing but the object was sent.
		if _, err := dec.Token(); err != io.EOF {
			return nil, apperr.Invalid("invalid JSON body", "body: unexpected data after the JSON object")
		}
		// Unmarshal refuses nothing the Decoder accepts (one object, then only white space),
		// but were it to, the Decoder's reading stands.
	}
	// What the store cannot hold, anywhere in the body: NUL characters and numbers out of
	// bounds (numbers.go).
	if err := CheckJSON(trimmed); err != nil {
		return nil, err
	}
	return &Fields{raw: raw}, nil
}

// invalidBody is the 400 for issues found anywhere in a body.
func invalidBody(issues []string) error {
	return apperr.Invalid("validation failed", issues...)
}

// nulEscape is how JSON spells the NUL character inside a string; a raw NUL byte is not valid
// JSON, so this escape is the only way one arrives.
var nulEscape = []byte(`\u0000`)

// maxNULIssues bounds the issues one body can produce, so the answer stays small.
const maxNULIssues = 10

// NULProblem is the issue text for a string or key holding the NUL character.
const NULProblem = "must not contain the NUL character (U+0000)"

// NULIssues names every string value and object key of the JSON value body that holds the NUL
// character, by its path (title, metadata.key, levelData.annotations[0].title). Postgres text and
// jsonb refuse NUL, so such input must be refused as a 400 before it reaches a query, and
// checking it here, in the one decoder every JSON body goes through, covers every field of
// every route at once. Bodies without the escape (nearly all) cost one byte search.
func NULIssues(body []byte) []string {
	if !bytes.Contains(body, nulEscape) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var issues []string
	// A malformed body is the decoder's to report; whatever was found before the error stands.
	_ = walkJSON(dec, "", func(path string, tok json.Token, _ bool) {
		if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 && len(issues) < maxNULIssues {
			issues = append(issues, pathOrBody(path)+": "+NULProblem)
		}
	})
	return issues
}

func jsonProblem(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Sprintf("malformed JSON at byte %d", e.Offset)
	case *json.UnmarshalTypeError:
		return "must be a JSON object"
	}
	return "malformed JSON"
}

// Len is the number of fields present.
func (f *Fields) Len() int { return len(f.raw) }

// Has reports whether name is present (even as null).
func (f *Fields) Has(name string) bool { _, ok := f.raw[name]; return ok }

// IsNull reports whether name is present with the value null.
func (f *Fields) IsNull(name string) bool {
	v, ok := f.raw[name]
	return ok && string(bytes.TrimSpace(v)) == "null"
}

// Issuef records a problem with the request.
func (f *Fields) Issuef(format string, args ...any) {
	f.issues = append(f.issues, fmt.Sprintf(format, args...))
}

// Only records an issue for each present field not in allowed.
func (f *Fields) Only(allowed ...string) {
	ok := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		ok[a] = true
	}
	var unknown []string
	for k := range f.raw {
		if !ok[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		f.Issuef("%s: unknown field", Printable(k))
	}
}

// Err returns the 400 for the recorded issues, or nil.
func (f *Fields) Err() error {
	if len(f.issues) == 0 {
		return nil
	}
	return apperr.Invalid("validation failed", f.issues...)
}

// String returns a present, non-null string field whose length in characters is within
// [min, max]; ok is false when absent, null or invalid (invalid records an issue).
func (f *Fields) String(name string, min, max int) (string, bool) {
	v, ok := f.raw[name]
	if !ok || f.IsNull(name) {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		f.Issuef("%s: must be a string", name)
		return "", false
	}
	if n := utf8.RuneCountInString(s); n < min || n > max {
		if min > 0 {
			f.Issuef("%s: must be %d-%d characters", name, min, max)
		} else {
			f.Issuef("%s: must be at most %d characters", name, max)
		}
		return "", false
	}
	return s, true
}

// Enum returns a present, non-null string field that is one of values.
func (f *Fields) Enum(name string, values ...string) (string, bool) {
	v, ok := f.raw[name]
	if !ok || f.IsNull(name) {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		for _, allowed := range values {
			if s == allowed {
				return s, true
			}
		}
	}
	f.Issuef("%s: must be one of %s", name, quoteList(values))
	return "", false
}

// Int returns a present, non-null integer field within [min, max]. Fractions, exponents and
// numbers beyond int64 are rejected rather than rounded.
func (f *Fields) Int(name string, min, max int64) (int64, bool) {
	v, ok := f.raw[name]
	if !ok || f.IsNull(name) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil || n < min || n > max {
		if max == math.MaxInt64 {
			f.Issuef("%s: must be an integer >= %d", name, min)
		} else {
			f.Issuef("%s: must be an integer from %d to %d", name, min, max)
		}
		return 0, false
	}
	return n, true
}

// Bool returns a present, non-null boolean field.
func (f *Fields) Bool(name string) (bool, bool) {
	v, ok := f.raw[name]
	if !ok || f.IsNull(name) {
		return false, false
	}
	switch string(bytes.TrimSpace(v)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	f.Issuef("%s: must be a boolean", name)
	return false, false
}

// Raw returns a present field's raw JSON.
func (f *Fields) Raw(name string) (json.RawMessage, bool) {
	v, ok := f.raw[name]
	return v, ok
}

// NotNull records an issue when name is present as null.
func (f *Fields) NotNull(name string) {
	if f.IsNull(name) {
		f.Issuef("%s: must not be null", name)
	}
}

func quoteList(values []string) string {
	s := ""
	for i, v := range values {
		if i > 0 {
			s += ", "
		}
		s += "'" + v + "'"
	}
	return s
}

// Printable keeps an attacker-supplied field name short and free of control characters before it
// is echoed in an issue.
func Printable(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if len(out) >= 64 {
			out = append(out, '…')
			break
		}
		if r < 0x20 || r == 0x7f {
			r = '?'
		}
		out = append(out, r)
	}
	return string(out)
}

// StringList returns a present, non-null array of distinct strings, at most maxItems long,
// each accepted by valid (problem says what a valid item is).
func (f *Fields) StringList(name string, maxItems int, valid func(string) bool, problem string) ([]string, bool) {
	v, ok := f.raw[name]
	if !ok || f.IsNull(name) {
		return nil, false
	}
	var items []any
	if err := json.Unmarshal(v, &items); err != nil {
		f.Issuef("%s: must be an array of strings", name)
		return nil, false
	}
	if len(items) > maxItems {
		f.Issuef("%s: at most %d items", name, maxItems)
		return nil, false
	}
	out := make([]string, 0, len(items))
	seen := make(map[string]bool, len(items))
	bad := false
	for i, item := range items {
		s, isString := item.(string)
		switch {
		case !isString:
			f.Issuef("%s[%d]: must be a string", name, i)
			bad = true
		case !valid(s):
			f.Issuef("%s[%d]: %s", name, i, problem)
			bad = true
		case seen[s]:
			f.Issuef("%s[%d]: duplicate value", name, i)
			bad = true
		default:
			seen[s] = true
			out = append(out, s)
		}
	}
	if bad {
		return nil, false
	}
	return out, true
}

// DecodeArray parses raw as a JSON array and returns its elements undecoded.
func DecodeArray(raw []byte) ([]json.RawMessage, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	if items == nil {
		return nil, fmt.Errorf("not an array")
	}
	return items, nil
}

// Require records "name: required" for each field that is absent or null.
func (f *Fields) Require(names ...string) {
	for _, name := range names {
		if !f.Has(name) || f.IsNull(name) {
			f.Issuef("%s: required", name)
		}
	}
}

// HTTPURLProblem says what is wrong with s as an absolute http(s) URL (avatar URLs), or "".
func HTTPURLProblem(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "must be an absolute http(s) URL"
	}
	return ""
}

// Object decodes a present, non-null field that must itself be a JSON object; its problems are
// reported under name (name.field: ...). ok is false when absent, null or not an object.
func (f *Fields) Object(name string, parse func(*Fields)) bool {
	v, ok := f.raw[name]
	if !ok || f.IsNull(name) {
		return false
	}
	inner, err := DecodeObject(v, false)
	if err != nil {
		f.Issuef("%s: must be a JSON object", name)
		return false
	}
	parse(inner)
	for _, issue := range inner.issues {
		f.Issuef("%s.%s", name, issue)
	}
	return len(inner.issues) == 0
}
