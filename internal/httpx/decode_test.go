package httpx

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
)

// require400 asserts err is an *apperr.Error with status 400 and returns it.
func require400(t *testing.T, err error) *apperr.Error {
	t.Helper()
	require.Error(t, err)
	var e *apperr.Error
	require.True(t, errors.As(err, &e), "want *apperr.Error, got %T: %v", err, err)
	require.Equal(t, http.StatusBadRequest, e.Status)
	require.NotEmpty(t, e.Issues, "a 400 must name its problems")
	return e
}

// issuesContain asserts that some issue contains each wanted substring.
func issuesContain(t *testing.T, issues []string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		found := false
		for _, is := range issues {
			if strings.Contains(is, w) {
				found = true
				break
			}
		}
		require.True(t, found, "no issue contains %q; issues: %q", w, issues)
	}
}

func decode(t *testing.T, body string) *Fields {
	t.Helper()
	f, err := DecodeObject([]byte(body), true)
	require.NoError(t, err)
	return f
}

func TestDecodeObject(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		emptyOK bool
		wantErr bool
		wantLen int
	}{
		{name: "empty body allowed", body: "", emptyOK: true, wantLen: 0},
		{name: "whitespace body allowed", body: " \n\t ", emptyOK: true, wantLen: 0},
		{name: "empty body refused", body: "", emptyOK: false, wantErr: true},
		{name: "whitespace body refused", body: "  \n", emptyOK: false, wantErr: true},
		{name: "empty object", body: "{}", wantLen: 0},
		{name: "object with fields", body: `{"a":1,"b":"x","c":null}`, wantLen: 3},
		{name: "surrounding whitespace", body: "\n  {\"a\":1}  \n", wantLen: 1},
		{name: "array", body: `[]`, emptyOK: true, wantErr: true},
		{name: "array of object", body: `[{"a":1}]`, emptyOK: true, wantErr: true},
		{name: "string", body: `"x"`, emptyOK: true, wantErr: true},
		{name: "null", body: `null`, emptyOK: true, wantErr: true},
		{name: "number", body: `42`, emptyOK: true, wantErr: true},
		{name: "boolean", body: `true`, emptyOK: true, wantErr: true},
		{name: "truncated object", body: `{`, emptyOK: true, wantErr: true},
		{name: "truncated after key", body: `{"a":`, emptyOK: true, wantErr: true},
		{name: "missing value", body: `{"a"}`, emptyOK: true, wantErr: true},
		{name: "trailing comma", body: `{"a":1,}`, emptyOK: true, wantErr: true},
		{name: "single quotes", body: `{'a':1}`, emptyOK: true, wantErr: true},
		{name: "unquoted key", body: `{a:1}`, emptyOK: true, wantErr: true},
		{name: "second object", body: `{"a":1}{"b":2}`, emptyOK: true, wantErr: true},
		{name: "trailing word", body: `{"a":1} x`, emptyOK: true, wantErr: true},
		{name: "trailing number", body: `{} 1`, emptyOK: true, wantErr: true},
		{name: "trailing string", body: `{}"x"`, emptyOK: true, wantErr: true},
		{name: "trailing comma then object", body: `{},{}`, emptyOK: true, wantErr: true},
		{name: "BOM before object", body: "\ufeff{}", emptyOK: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := DecodeObject([]byte(tt.body), tt.emptyOK)
			if tt.wantErr {
				e := require400(t, err)
				require.Equal(t, "invalid JSON body", e.Message)
				issuesContain(t, e.Issues, "body: ")
				require.Nil(t, f)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, f)
			require.Equal(t, tt.wantLen, f.Len())
			require.NoError(t, f.Err())
		})
	}
}

// TestDecodeObjectTrailingCloser covers trailing data that starts with a closing bracket.
func TestDecodeObjectTrailingCloser(t *testing.T) {
	for _, body := range []string{`{"a":1}}`, `{}]`, `{"a":1}]]]`, `{} }`, `{}}garbage`} {
		t.Run(body, func(t *testing.T) {
			_, err := DecodeObject([]byte(body), true)
			require400(t, err)
		})
	}
}

func TestFieldsHasIsNull(t *testing.T) {
	f := decode(t, `{"a":null,"b":1,"c":"null"}`)
	require.True(t, f.Has("a"))
	require.True(t, f.IsNull("a"))
	require.True(t, f.Has("b"))
	require.False(t, f.IsNull("b"))
	require.False(t, f.IsNull("c"), `the string "null" is not null`)
	require.False(t, f.Has("d"))
	require.False(t, f.IsNull("d"))
	raw, ok := f.Raw("b")
	require.True(t, ok)
	require.Equal(t, "1", string(raw))
	_, ok = f.Raw("d")
	require.False(t, ok)
}

func TestFieldsInt(t *testing.T) {
	tests := []struct {
		name    string
		value   string // raw JSON; "" means the field is absent
		min     int64
		max     int64
		want    int64
		wantOK  bool
		wantErr bool
	}{
		{name: "zero", value: `0`, max: math.MaxInt64, want: 0, wantOK: true},
		{name: "negative zero", value: `-0`, max: math.MaxInt64, want: 0, wantOK: true},
		{name: "2^62", value: `4611686018427387904`, max: math.MaxInt64, want: 1 << 62, wantOK: true},
		{name: "max int64", value: `9223372036854775807`, max: math.MaxInt64, want: math.MaxInt64, wantOK: true},
		{name: "2^63 overflows", value: `9223372036854775808`, max: math.MaxInt64, wantErr: true},
		{name: "huge", value: `123456789012345678901234567890`, max: math.MaxInt64, wantErr: true},
		{name: "minus one", value: `-1`, max: math.MaxInt64, wantErr: true},
		{name: "fraction", value: `1.5`, max: math.MaxInt64, wantErr: true},
		{name: "integral fraction", value: `1.0`, max: math.MaxInt64, wantErr: true},
		{name: "exponent", value: `1e3`, max: math.MaxInt64, wantErr: true},
		{name: "upper exponent", value: `1E3`, max: math.MaxInt64, wantErr: true},
		{name: "numeric string", value: `"5"`, max: math.MaxInt64, wantErr: true},
		{name: "boolean", value: `true`, max: math.MaxInt64, wantErr: true},
		{name: "array", value: `[1]`, max: math.MaxInt64, wantErr: true},
		{name: "object", value: `{"n":1}`, max: math.MaxInt64, wantErr: true},
		{name: "null is absent", value: `null`, max: math.MaxInt64},
		{name: "absent", value: "", max: math.MaxInt64},
		{name: "bounded in range", value: `7`, min: 1, max: 10, want: 7, wantOK: true},
		{name: "bounded at min", value: `1`, min: 1, max: 10, want: 1, wantOK: true},
		{name: "bounded at max", value: `10`, min: 1, max: 10, want: 10, wantOK: true},
		{name: "bounded below", value: `0`, min: 1, max: 10, wantErr: true},
		{name: "bounded above", value: `11`, min: 1, max: 10, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{}`
			if tt.value != "" {
				body = `{"n":` + tt.value + `}`
			}
			f := decode(t, body)
			got, ok := f.Int("n", tt.min, tt.max)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
			if tt.wantErr {
				e := require400(t, f.Err())
				require.Len(t, e.Issues, 1)
				if tt.max == math.MaxInt64 {
					require.Equal(t, "n: must be an integer >= 0", e.Issues[0])
				} else {
					require.Equal(t, "n: must be an integer from 1 to 10", e.Issues[0])
				}
				return
			}
			require.NoError(t, f.Err())
		})
	}
}

func TestFieldsString(t *testing.T) {
	tests := []struct {
		name     string
		value    string
		min, max int
		wantOK   bool
		issue    string
	}{
		{name: "ascii in range", value: `"abc"`, min: 1, max: 5, wantOK: true},
		{name: "at max", value: `"abcde"`, min: 1, max: 5, wantOK: true},
		{name: "over max", value: `"abcdef"`, min: 1, max: 5, issue: "s: must be 1-5 characters"},
		{name: "empty with min 1", value: `""`, min: 1, max: 5, issue: "s: must be 1-5 characters"},
		{name: "empty with min 0", value: `""`, min: 0, max: 5, wantOK: true},
		{name: "over max with min 0", value: `"abcdef"`, min: 0, max: 5, issue: "s: must be at most 5 characters"},
		{name: "multibyte counted as runes", value: `"ééééé"`, min: 1, max: 5, wantOK: true},
		{name: "multibyte over", value: `"éééééé"`, min: 1, max: 5, issue: "s: must be 1-5 characters"},
		{name: "escaped runes counted once", value: `"\u00e9\u00e9\u00e9\u00e9\u00e9"`, min: 1, max: 5, wantOK: true},
		{name: "number", value: `5`, min: 0, max: 5, issue: "s: must be a string"},
		{name: "boolean", value: `false`, min: 0, max: 5, issue: "s: must be a string"},
		{name: "array", value: `["a"]`, min: 0, max: 5, issue: "s: must be a string"},
		{name: "object", value: `{}`, min: 0, max: 5, issue: "s: must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := decode(t, `{"s":`+tt.value+`}`)
			_, ok := f.String("s", tt.min, tt.max)
			require.Equal(t, tt.wantOK, ok)
			if tt.issue == "" {
				require.NoError(t, f.Err())
				return
			}
			e := require400(t, f.Err())
			require.Equal(t, []string{tt.issue}, e.Issues)
		})
	}

	t.Run("value round trips", func(t *testing.T) {
		f := decode(t, `{"s":"h\u00e9llo \"w\""}`)
		s, ok := f.String("s", 1, 20)
		require.True(t, ok)
		require.Equal(t, `héllo "w"`, s)
	})
	t.Run("absent and null record nothing", func(t *testing.T) {
		f := decode(t, `{"s":null}`)
		_, ok := f.String("s", 1, 5)
		require.False(t, ok)
		_, ok = f.String("missing", 1, 5)
		require.False(t, ok)
		require.NoError(t, f.Err())
	})
}

func TestFieldsEnum(t *testing.T) {
	tests := []struct {
		value  string
		want   string
		wantOK bool
		issue  bool
	}{
		{value: `"active"`, want: "active", wantOK: true},
		{value: `"inactive"`, want: "inactive", wantOK: true},
		{value: `"Active"`, issue: true},
		{value: `" active"`, issue: true},
		{value: `""`, issue: true},
		{value: `"deleted"`, issue: true},
		{value: `1`, issue: true},
		{value: `true`, issue: true},
		{value: `["active"]`, issue: true},
		{value: `null`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			f := decode(t, `{"status":`+tt.value+`}`)
			got, ok := f.Enum("status", "active", "inactive")
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
			if tt.issue {
				e := require400(t, f.Err())
				require.Equal(t, []string{"status: must be one of 'active', 'inactive'"}, e.Issues)
			} else {
				require.NoError(t, f.Err())
			}
		})
	}
}

func TestFieldsBool(t *testing.T) {
	tests := []struct {
		value  string
		want   bool
		wantOK bool
		issue  bool
	}{
		{value: `true`, want: true, wantOK: true},
		{value: `false`, want: false, wantOK: true},
		{value: `"true"`, issue: true},
		{value: `1`, issue: true},
		{value: `0`, issue: true},
		{value: `{}`, issue: true},
		{value: `null`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			f := decode(t, `{"b":`+tt.value+`}`)
			got, ok := f.Bool("b")
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
			if tt.issue {
				e := require400(t, f.Err())
				require.Equal(t, []string{"b: must be a boolean"}, e.Issues)
			} else {
				require.NoError(t, f.Err())
			}
		})
	}
	f := decode(t, `{}`)
	_, ok := f.Bool("b")
	require.False(t, ok)
	require.NoError(t, f.Err())
}

func TestFieldsNotNull(t *testing.T) {
	f := decode(t, `{"a":null,"b":1}`)
	f.NotNull("a")
	f.NotNull("b")
	f.NotNull("absent")
	e := require400(t, f.Err())
	require.Equal(t, []string{"a: must not be null"}, e.Issues)
}

func TestFieldsOnly(t *testing.T) {
	t.Run("known fields pass", func(t *testing.T) {
		f := decode(t, `{"a":1,"b":null}`)
		f.Only("a", "b", "c")
		require.NoError(t, f.Err())
	})
	t.Run("unknown fields named, sorted", func(t *testing.T) {
		f := decode(t, `{"zeta":1,"a":1,"alpha":2}`)
		f.Only("a")
		e := require400(t, f.Err())
		require.Equal(t, "validation failed", e.Message)
		require.Equal(t, []string{"alpha: unknown field", "zeta: unknown field"}, e.Issues)
	})
	t.Run("field names are case sensitive", func(t *testing.T) {
		f := decode(t, `{"LimitBytes":1}`)
		f.Only("limitBytes")
		e := require400(t, f.Err())
		require.Equal(t, []string{"LimitBytes: unknown field"}, e.Issues)
	})
	t.Run("control characters in echoed name are replaced", func(t *testing.T) {
		f := decode(t, `{"a\nb\u0001c\u007f":1}`)
		f.Only()
		e := require400(t, f.Err())
		require.Equal(t, []string{"a?b?c?: unknown field"}, e.Issues)
		// A NUL in a name is refused by the decoder itself, echoed the same way.
		_, err := DecodeObject([]byte(`{"a\nb\u0000c\u007f":1}`), false)
		require.Equal(t, []string{"a?b?c?: " + NULProblem}, require400(t, err).Issues)
	})
	t.Run("long echoed name is truncated", func(t *testing.T) {
		f := decode(t, `{"`+strings.Repeat("é", 1000)+`":1}`)
		f.Only()
		e := require400(t, f.Err())
		require.Len(t, e.Issues, 1)
		require.Equal(t, strings.Repeat("é", 64)+"…: unknown field", e.Issues[0])
	})
}

func TestFieldsErrCollectsEveryIssue(t *testing.T) {
	f := decode(t, `{"n":-1,"s":"","e":"x","b":"no","l":"x","u":1}`)
	f.Only("n", "s", "e", "b", "l")
	f.Int("n", 0, math.MaxInt64)
	f.String("s", 1, 10)
	f.Enum("e", "y")
	f.Bool("b")
	f.StringList("l", 5, func(string) bool { return true }, "bad")
	f.Issuef("custom: %d", 42)
	e := require400(t, f.Err())
	require.Equal(t, []string{
		"u: unknown field",
		"n: must be an integer >= 0",
		"s: must be 1-10 characters",
		"e: must be one of 'y'",
		"b: must be a boolean",
		"l: must be an array of strings",
		"custom: 42",
	}, e.Issues)
	// The envelope carries the issues.
	body := e.Body()
	require.Equal(t, "error", body["status"])
	require.Equal(t, "validation failed", body["message"])
	require.Equal(t, e.Issues, body["issues"])
}

func isHex24(s string) bool {
	if len(s) != 24 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

func TestFieldsStringList(t *testing.T) {
	const id1, id2 = "0123456789abcdef01234567", "89abcdef0123456789abcdef"
	tests := []struct {
		name   string
		value  string
		max    int
		want   []string
		wantOK bool
		issues []string
	}{
		{name: "empty array", value: `[]`, max: 3, want: []string{}, wantOK: true},
		{name: "valid ids", value: `["` + id1 + `","` + id2 + `"]`, max: 3, want: []string{id1, id2}, wantOK: true},
		{name: "at max items", value: `["` + id1 + `","` + id2 + `"]`, max: 2, want: []string{id1, id2}, wantOK: true},
		{name: "over max items", value: `["` + id1 + `","` + id2 + `"]`, max: 1, issues: []string{"l: at most 1 items"}},
		{name: "duplicate", value: `["` + id1 + `","` + id1 + `"]`, max: 3, issues: []string{"l[1]: duplicate value"}},
		{name: "invalid item", value: `["` + id1 + `","xyz"]`, max: 3, issues: []string{"l[1]: must be an id"}},
		{name: "non-string item", value: `[1,"` + id1 + `",null,{}]`, max: 5, issues: []string{
			"l[0]: must be a string", "l[2]: must be a string", "l[3]: must be a string"}},
		{name: "every problem named", value: `["` + id1 + `","bad",true,"` + id1 + `"]`, max: 5, issues: []string{
			"l[1]: must be an id", "l[2]: must be a string", "l[3]: duplicate value"}},
		{name: "string instead of array", value: `"` + id1 + `"`, max: 3, issues: []string{"l: must be an array of strings"}},
		{name: "object instead of array", value: `{"0":"` + id1 + `"}`, max: 3, issues: []string{"l: must be an array of strings"}},
		{name: "number instead of array", value: `1`, max: 3, issues: []string{"l: must be an array of strings"}},
		{name: "null is absent", value: `null`, max: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := decode(t, `{"l":`+tt.value+`}`)
			got, ok := f.StringList("l", tt.max, isHex24, "must be an id")
			require.Equal(t, tt.wantOK, ok)
			if tt.wantOK {
				require.Equal(t, tt.want, got)
			} else {
				require.Nil(t, got)
			}
			if tt.issues == nil {
				require.NoError(t, f.Err())
				return
			}
			e := require400(t, f.Err())
			require.Equal(t, tt.issues, e.Issues)
		})
	}
}

// TestDecodeObjectRefusesNUL: Postgres text and jsonb refuse the NUL character, so the decoder
// every JSON body goes through refuses it anywhere in the body (values, keys, nested, in
// arrays) as a 400 naming each place, and lets every other string (an escaped backslash before
// "u0000" included) through.
func TestDecodeObjectRefusesNUL(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string // the paths named, in order
	}{
		{"top-level string", `{"title":"a\u0000b"}`, []string{"title"}},
		{"only a NUL", `{"description":"\u0000"}`, []string{"description"}},
		{"nested value", `{"metadata":{"plan":"x\u0000"}}`, []string{"metadata.plan"}},
		{"nested key", `{"metadata":{"a\u0000b":1}}`, []string{"metadata.a?b"}},
		{"top-level key", `{"ti\u0000tle":"x"}`, []string{"ti?tle"}},
		{"in an array", `{"levelData":{"annotations":[{"title":"ok"},{"title":"\u0000"}]}}`,
			[]string{"levelData.annotations[1].title"}},
		{"array of strings", `{"events":["a","b\u0000"]}`, []string{"events[1]"}},
		{"several fields", `{"title":"\u0000","displayName":"x\u0000","n":1}`, []string{"title", "displayName"}},
		{"after other escapes", `{"title":"\"\\\n\u00e9\u0000"}`, []string{"title"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeObject([]byte(tt.body), false)
			e := require400(t, err)
			require.Len(t, e.Issues, len(tt.want), "%q", e.Issues)
			for i, path := range tt.want {
				require.Equal(t, path+": "+NULProblem, e.Issues[i])
			}
		})
	}

	for _, ok := range []string{
		`{"title":"\\u0000"}`,       // a backslash, then the text u0000
		`{"title":"\\\\u0000"}`,     // two backslashes, then the text
		`{"title":"\u0001 \u001f"}`, // other control characters are the fields' own business
		`{"title":"u0000"}`,
	} {
		f, err := DecodeObject([]byte(ok), false)
		require.NoError(t, err, ok)
		_, has := f.String("title", 0, 100)
		require.True(t, has, ok)
	}

	// Many NULs: the answer stays small.
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 100; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":"\u0000"`)
	}
	b.WriteString("}")
	_, err := DecodeObject([]byte(b.String()), false)
	require.Len(t, require400(t, err).Issues, maxNULIssues)
}

// TestNULIssuesNeedsTheEscape: the walk runs only when the escape is in the body; a body that
// is malformed after a NUL still reports what was found (the decoder reports the rest).
func TestNULIssuesNeedsTheEscape(t *testing.T) {
	require.Nil(t, NULIssues([]byte(`{"title":"plain"}`)))
	require.Equal(t, []string{"a: " + NULProblem}, NULIssues([]byte(`{"a":"\u0000","b":`)))
	require.Equal(t, []string{"body: " + NULProblem}, NULIssues([]byte(`"\u0000"`)))
}
