package httpx

import (
	"errors"
	"math"
	"net/http"
	"testing"

	"github.com/splathost/splathost/internal/apperr"
)

// FuzzDecodeObject asserts that DecodeObject and every field getter never panic, that each
// failure is a 400 *apperr.Error naming at least one issue, and that no accepted body holds a
// number Postgres' jsonb would refuse or a double cannot hold (ruleAccepts, numbers_test.go).
func FuzzDecodeObject(f *testing.F) {
	for _, seed := range []string{
		``,
		`{}`,
		`[]`,
		`"x"`,
		`null`,
		`{`,
		`{"a":1}}`,
		`{"a":1} x`,
		`{"n":9223372036854775808,"s":"é","e":"a","b":true,"l":["0123456789abcdef01234567"]}`,
		`{"n":-1,"s":"","e":1,"b":"true","l":[1,null,{}],"x":{"y":[1,2]}}`,
		`{"n":1e3,"s":null,"e":null,"b":null,"l":null,"\u0000":1}`,
		`{"n":1.5,"l":"abc","s":["x"],"n":2}`,
		"{\"s\":\"\xff\xfe\"}",
		`{"l":["a","a","0123456789abcdef01234567","0123456789abcdef01234567"]}`,
		`{"n":1e200000,"x":{"y":[1e-20000,5e-324,0e99999,0e-99999,-0]}}`,
		`{"n":123456789012345678901234567890,"l":[1.7976931348623157e308,2.2250738585072014e-308]}`,
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, emptyOK bool) {
		fields, err := DecodeObject(body, emptyOK)
		if err != nil {
			check400(t, err)
			if fields != nil {
				t.Fatalf("fields returned with an error")
			}
			return
		}
		if fields == nil {
			t.Fatalf("nil fields without an error")
		}
		for _, lit := range numberLiterals(body) {
			if !ruleAccepts(lit) {
				t.Fatalf("accepted %q, which Postgres or a double cannot hold", lit)
			}
		}
		fields.Only("n", "s", "e", "b", "l")
		for _, name := range []string{"n", "s", "e", "b", "l", "missing"} {
			fields.Has(name)
			fields.IsNull(name)
			fields.Raw(name)
			fields.NotNull(name)
			fields.Int(name, 0, math.MaxInt64)
			fields.Int(name, -5, 5)
			fields.String(name, 0, 10)
			fields.String(name, 1, 3)
			fields.Enum(name, "a", "b")
			fields.Bool(name)
			fields.StringList(name, 3, func(s string) bool { return len(s) == 24 }, "bad id")
		}
		fields.Len()
		if err := fields.Err(); err != nil {
			check400(t, err)
		}
	})
}

func check400(t *testing.T, err error) {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) {
		t.Fatalf("error is %T, not *apperr.Error: %v", err, err)
	}
	if e.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %v", e.Status, err)
	}
	if len(e.Issues) == 0 {
		t.Fatalf("400 without issues: %v", err)
	}
}
