package httpx

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// The bounds every JSON number in a request body must keep (docs/security.md, Numbers). A body
// is stored as Postgres jsonb (metadata, levelData, room drafts) and read back by Go and by the
// embeds' JavaScript as IEEE-754 doubles, so a number is accepted only when both can hold it:
//
//   - it is written with at most MaxNumberDigits digits before any exponent: Go's strconv (so
//     encoding/json) misplaces the decimal point of a longer one (1 followed by 1000 zeros and
//     e-1000 reads as 1e-201; its decimal keeps 800 digits and counts the point from those), and
//     no double needs more than 767 significant digits to be written exactly;
//   - as a double it is 0, written with zero digits only (1e-400, which rounds to 0, is
//     refused: every reader would see 0, not the number sent), or its magnitude is within
//     [MinNormalDouble, math.MaxFloat64]. Subnormal doubles (5e-324) are refused too: they are
//     where a double keeps fewer significant digits than it shows, and the embeds hand these
//     numbers to WebGL, whose shaders flush them to zero;
//   - Postgres' numeric, which parses every jsonb number, holds it as written: at most
//     MaxNumberScale digits after the decimal point once the exponent is applied (1.50e-3 has
//     5), and an exponent under 1073741823 in magnitude (Postgres 15's numeric_in refuses
//     1e-16384, 0e-16384 and 1e131072 with "value overflows numeric format", and 0e1073741823).
//     With the rules above only a zero (0e-16384) can still break these.
const (
	// MaxNumberDigits is the most digits a number may have before its exponent.
	MaxNumberDigits = 800
	// MinNormalDouble is the smallest positive normal IEEE-754 double, 2^-1022.
	MinNormalDouble = 2.2250738585072014e-308
	// MaxNumberScale is Postgres numeric's limit on digits after the decimal point
	// (NUMERIC_DSCALE_MAX).
	MaxNumberScale = 16383
	// maxNumberExponent is the largest exponent magnitude Postgres' numeric_in takes
	// (INT_MAX/2 - 1); only a zero can reach it without breaking a rule above first.
	maxNumberExponent = 1073741822
	// maxNumberIssues bounds the issues one body can produce, so the answer stays small.
	maxNumberIssues = 10
	// shortNumber is the longest literal without an exponent that needs no parsing: 300
	// characters cannot spell a magnitude of 1e300 or more, a non-zero one under 1e-298, nor
	// more than 298 digits after the point.
	shortNumber = 300
)

// The issue texts for a number outside the bounds, after its path.
const (
	NumberRangeProblem = "number out of range (must be 0 or a finite double of magnitude " +
		"2.2250738585072014e-308 to 1.7976931348623157e308)"
	NumberScaleProblem  = "number has more than 16383 digits after the decimal point"
	NumberDigitsProblem = "number has more than 800 digits"
)

// NumberProblem says what is wrong with lit, one well-formed JSON number, or "".
func NumberProblem(lit string) string {
	mantissa, exp, hasExp := lit, int64(0), false
	if i := indexExponent(lit); i >= 0 {
		mantissa, hasExp = lit[:i], true
		exp = parseExponent(lit[i+1:])
	}
	if !hasExp && len(lit) <= shortNumber {
		return ""
	}
	if countDigits(mantissa) > MaxNumberDigits {
		return NumberDigitsProblem
	}
	x, err := strconv.ParseFloat(lit, 64)
	if err != nil && !isRangeErr(err) {
		return NumberRangeProblem // not reached for a JSON number; refuse rather than guess
	}
	switch ax := math.Abs(x); {
	case math.IsInf(x, 0):
		return NumberRangeProblem
	case ax == 0:
		if hasNonZeroDigit(mantissa) {
			return NumberRangeProblem // underflowed
		}
	case ax < MinNormalDouble:
		return NumberRangeProblem // subnormal
	}
	// The double is fine; what follows is Postgres' view of the literal.
	if exp > maxNumberExponent || exp < -maxNumberExponent {
		return NumberRangeProblem
	}
	frac := 0
	if dot := indexByte(mantissa, '.'); dot >= 0 {
		frac = len(mantissa) - dot - 1
	}
	if int64(frac)-exp > MaxNumberScale {
		return NumberScaleProblem
	}
	return ""
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func indexExponent(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			return i
		}
	}
	return -1
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// parseExponent reads a JSON exponent (optional sign, digits), saturating far beyond any bound.
func parseExponent(s string) int64 {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var e int64
	for i := 0; i < len(s); i++ {
		if e < 1<<40 {
			e = e*10 + int64(s[i]-'0')
		}
	}
	if neg {
		return -e
	}
	return e
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}

func hasNonZeroDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '1' && s[i] <= '9' {
			return true
		}
	}
	return false
}

// NumberIssues names every number of the JSON value body outside the bounds above, by its
// path (metadata.n, levelData.camera.position[1]); nil when there is none. The decoder runs it
// on every body, so every route is covered at once; other code holding raw client JSON that
// will be stored (a room's frames, were one to bypass DecodeObject) calls it, or CheckJSON.
// A body whose numbers are all short and exponent-free (nearly all) costs one scan of its bytes.
func NumberIssues(body []byte) []string {
	if numbersFine(body) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var issues []string
	// A malformed body is the decoder's to report; whatever was found before the error stands.
	_ = walkJSON(dec, "", func(path string, tok json.Token, _ bool) {
		n, ok := tok.(json.Number)
		if !ok || len(issues) >= maxNumberIssues {
			return
		}
		if problem := NumberProblem(string(n)); problem != "" {
			issues = append(issues, pathOrBody(path)+": "+problem)
		}
	})
	return issues
}

// CheckJSON is the decoder's rule for any stored JSON, for callers that hold raw client JSON
// outside DecodeObject: nil, or the 400 naming every NUL and every number out of bounds.
func CheckJSON(body []byte) error {
	issues := append(NULIssues(body), NumberIssues(body)...)
	if len(issues) == 0 {
		return nil
	}
	return invalidBody(issues)
}

// numbersFine reports whether every number in body (valid JSON) is short and has no exponent,
// so within bounds; false when one needs a closer look. Strings are skipped, their escaped
// quotes included.
func numbersFine(body []byte) bool {
	for i := 0; i < len(body); {
		switch c := body[i]; {
		case c == '"':
			i = stringEnd(body, i+1)
		case c == '-' || (c >= '0' && c <= '9'):
			start := i
			for i < len(body) && isNumberByte(body[i]) {
				if body[i] == 'e' || body[i] == 'E' {
					return false
				}
				i++
			}
			if i-start > shortNumber {
				return false
			}
		default:
			i++
		}
	}
	return true
}

// stringEnd returns the index after the closing quote of the string whose content starts at i.
func stringEnd(body []byte, i int) int {
	for {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			return len(body)
		}
		q += i
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for j := q - 1; j >= i && body[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func pathOrBody(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// walkJSON reads one JSON value from dec and calls visit for each scalar token and object key
// (key true) with its path: keys joined by dots, array items as [i], keys made Printable.
// Nesting is bounded by encoding/json's own depth limit.
func walkJSON(dec *json.Decoder, path string, visit func(path string, tok json.Token, key bool)) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		visit(path, tok, false)
		return nil
	}
	switch d {
	case '{':
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			child := Printable(key)
			if path != "" {
				child = path + "." + child
			}
			visit(child, kt, true)
			if err := walkJSON(dec, child, visit); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkJSON(dec, path+"["+strconv.Itoa(i)+"]", visit); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}
