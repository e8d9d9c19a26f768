package httpx

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNumberBounds: every number a body may carry is one Go and JavaScript read back as the
// double sent and Postgres' jsonb stores; the rest are a 400 naming the place. The table is the
// rule's edges (docs/security.md, Numbers).
func TestNumberBounds(t *testing.T) {
	zeros := func(n int) string { return strings.Repeat("0", n) }
	tests := []struct {
		lit     string
		problem string // "" when accepted
	}{
		// Beyond the doubles (Postgres refused 1e200000 itself, which was a 500 before this rule).
		{"1e200000", NumberRangeProblem},
		{"-1e200000", NumberRangeProblem},
		{"1.8e308", NumberRangeProblem},
		{"1" + zeros(309), NumberRangeProblem}, // 1e309 as an integer, no exponent
		{"1e309", NumberRangeProblem},
		// Underflow: a non-zero literal that rounds to 0 would be stored as something else.
		{"1e-20000", NumberRangeProblem},
		{"-1e-400", NumberRangeProblem},
		{"0." + zeros(400) + "1", NumberRangeProblem},
		// Subnormals are refused (decided: a shader flushes them to zero).
		{"5e-324", NumberRangeProblem},
		{"2.2250738585072009e-308", NumberRangeProblem},
		{"-1e-310", NumberRangeProblem},
		// The edges that are kept.
		{"1e308", ""},
		{"1.7976931348623157e308", ""},
		{"-1.7976931348623157e308", ""},
		{"2.2250738585072014e-308", ""},
		{"-2.2250738585072014e-308", ""},
		{"1" + zeros(308), ""}, // 1e308 spelled out
		// Zeros of any spelling Postgres takes.
		{"0", ""},
		{"-0", ""},
		{"-0.0", ""},
		{"0e99999", ""},
		{"0E+1073741822", ""},
		{"0e1073741823", NumberRangeProblem}, // Postgres: value overflows numeric format
		{"0e-16383", ""},
		{"0e-16384", NumberScaleProblem},
		{"0e-99999", NumberScaleProblem},
		// A large integer is a double (rounded: 1.2345678901234568e29) and Postgres keeps every digit.
		{"123456789012345678901234567890", ""},
		// Digits: Go's strconv misreads a number of more than 800 (1000 zeros then e-1000 read
		// as 1e-201), so those are refused whatever their value.
		{"1" + zeros(799), NumberRangeProblem}, // 800 digits: 1e799
		{"1" + zeros(799) + "e-700", ""},       // 1e99
		{"1" + zeros(800) + "e-700", NumberDigitsProblem},
		{"1" + zeros(1000) + "e-1000", NumberDigitsProblem},
		{"1." + zeros(799), ""},
		{"1." + zeros(800), NumberDigitsProblem},
		{"0." + zeros(798) + "1", NumberRangeProblem}, // 1e-799 underflows
		// Digits after the point: Postgres' numeric keeps at most 16383, which only a zero can
		// reach within the rules above.
		{"0." + zeros(799) + "e-15584", ""},
		{"0." + zeros(799) + "e-15585", NumberScaleProblem},
		{"1." + zeros(15) + "e-293", ""},    // 1e-293: 308 digits after the point
		{"1e0000000000000000000000001", ""}, // 10: leading zeros in an exponent are JSON
		// Ordinary numbers.
		{"3", ""},
		{"-12.5", ""},
		{"6.02214076e23", ""},
		{"1E-7", ""},
	}
	for _, tt := range tests {
		name := tt.lit
		if len(name) > 40 {
			name = name[:20] + "…" + strconv.Itoa(len(tt.lit))
		}
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tt.problem, NumberProblem(tt.lit))
			// Through the decoder, nested in an object and in arrays.
			body := `{"ok":1,"metadata":{"n":` + tt.lit + `},"levelData":{"a":[[0],[1,` + tt.lit + `]]}}`
			_, err := DecodeObject([]byte(body), false)
			if tt.problem == "" {
				require.NoError(t, err)
				return
			}
			e := require400(t, err)
			require.Equal(t, []string{"metadata.n: " + tt.problem, "levelData.a[1][1]: " + tt.problem}, e.Issues)
			// And the model of Postgres agrees with what was refused for its reason.
			if tt.problem == NumberScaleProblem {
				require.False(t, pgNumericAccepts(tt.lit))
			}
		})
	}
}

// TestNumberIssuesPaths: the path names the place of each bad number; numbers inside strings
// are text; the answer stays small; a body of short plain numbers skips the walk.
func TestNumberIssuesPaths(t *testing.T) {
	require.Nil(t, NumberIssues([]byte(`{"a":1,"b":[-2.5,3],"c":"1e999999","d\"1e999":true}`)))
	require.Equal(t, []string{"body: " + NumberRangeProblem}, NumberIssues([]byte(`1e400`)))
	require.Equal(t, []string{"fields.levelData.x: " + NumberRangeProblem},
		NumberIssues([]byte(`{"type":"edit","fields":{"levelData":{"x":1e-20000}}}`)))
	require.Equal(t, []string{"initialCameraPosition[2]: " + NumberRangeProblem},
		NumberIssues([]byte(`{"title":"a\\\"b","initialCameraPosition":[0,0,-1e999]}`)))

	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 50; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("1e999")
	}
	b.WriteString("]")
	require.Len(t, NumberIssues([]byte(b.String())), maxNumberIssues)

	// A NUL and a bad number in one body: both named, by CheckJSON as by the decoder.
	_, err := DecodeObject([]byte(`{"t":"\u0000","n":1e999}`), false)
	require.Equal(t, []string{"t: " + NULProblem, "n: " + NumberRangeProblem}, require400(t, err).Issues)
	require.NoError(t, CheckJSON([]byte(`{"t":"x","n":[1,2e10]}`)))

	require.True(t, numbersFine([]byte(`{"a":"\\","b":[1.25,-7],"c":"e\"1e9"}`)))
	require.False(t, numbersFine([]byte(`{"a":"\\","b":1e9}`)))
}

// pgNumericAccepts models Postgres 15's numeric_in (set_var_from_str, then make_result) on a
// well-formed JSON number: the exponent must be under INT_MAX/2 in magnitude, the display
// scale (digits after the point once the exponent is applied) at most 16383, and the weight of
// the first non-zero base-10000 digit an int16. The e2e test TestNumbersPostgresAgrees checks
// this model against the real server.
func pgNumericAccepts(lit string) bool {
	s := strings.TrimPrefix(lit, "-")
	mantissa, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mantissa = s[:i]
		e := strings.TrimPrefix(s[i+1:], "+")
		neg := strings.HasPrefix(e, "-")
		e = strings.TrimPrefix(e, "-")
		for _, c := range e {
			if exp < 1<<40 {
				exp = exp*10 + int64(c-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	if exp >= math.MaxInt32/2 || exp <= -(math.MaxInt32/2) {
		return false
	}
	intPart, fracPart, _ := strings.Cut(mantissa, ".")
	dweight := int64(len(intPart)) - 1 + exp
	dscale := max(int64(len(fracPart))-exp, 0)
	if dscale > 0x3FFF {
		return false
	}
	digits := intPart + fracPart
	first := strings.IndexFunc(digits, func(r rune) bool { return r != '0' })
	if first < 0 {
		return true // zero: weight 0
	}
	w := dweight - int64(first) // decimal weight of the first non-zero digit
	weight := w / 4
	if w < 0 && w%4 != 0 {
		weight-- // floor
	}
	return weight >= math.MinInt16 && weight <= math.MaxInt16
}

// ruleAccepts is the rule of docs/security.md, Numbers, written from its words: at most 800
// digits, Postgres holds it, and as a double it is a zero of zero digits or a finite normal.
func ruleAccepts(lit string) bool {
	m, _, _ := strings.Cut(strings.ToLower(lit), "e")
	if strings.Count(m, "")-1-strings.Count(m, "-")-strings.Count(m, ".") > 800 || !pgNumericAccepts(lit) {
		return false
	}
	x, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(x, 0) {
		return false
	}
	if x == 0 {
		return strings.Trim(m, "-0.") == ""
	}
	return math.Abs(x) >= MinNormalDouble
}

// numberLiterals lists the numbers of the JSON value body as written (encoding/json's reading,
// not the decoder's scanner).
func numberLiterals(body []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out []string
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if n, ok := tok.(json.Number); ok {
			out = append(out, string(n))
		}
	}
}

// FuzzNumbers: no body the decoder accepts holds a number Postgres would refuse or that is not
// the double it spells, and the decoder refuses no number the rule allows.
func FuzzNumbers(f *testing.F) {
	for _, seed := range []string{
		`{"n":1e200000}`, `{"n":-1e200000}`, `{"n":1e-20000}`, `{"n":5e-324}`, `{"n":0e99999}`,
		`{"n":0e-16384}`, `{"n":-0}`, `{"n":123456789012345678901234567890}`,
		`{"m":{"a":[1,2.2250738585072014e-308,[1.7976931348623157e308]]},"s":"1e999"}`,
		`{"n":1.` + strings.Repeat("0", 800) + `}`,
		`{"n":0.` + strings.Repeat("0", 799) + `e-15585}`,
		`{"n":1` + strings.Repeat("0", 400) + `e-400}`,
		`{"n":0.` + strings.Repeat("0", 301) + `1}`,
		`{"a":"\"","b":1E+0001}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := DecodeObject(body, false)
		if err != nil {
			check400(t, err)
			if json.Valid(body) && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) && NULIssues(body) == nil {
				// Refused for its numbers only: some number must break the rule.
				bad := false
				for _, lit := range numberLiterals(body) {
					bad = bad || !ruleAccepts(lit)
				}
				if !bad {
					t.Fatalf("refused a body whose numbers all keep the rule: %v", err)
				}
			}
			return
		}
		for _, lit := range numberLiterals(body) {
			if !ruleAccepts(lit) {
				t.Fatalf("accepted %q, which Postgres or a double cannot hold", lit)
			}
		}
	})
}
