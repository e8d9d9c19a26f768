package user

import (
	"errors"
	"net/http"
	"testing"

	"github.com/splathost/splathost/internal/apperr"
)

// FuzzParseCustomerPatch asserts that parseCustomerPatch never panics and that every error is a
// 400 *apperr.Error naming at least one issue.
func FuzzParseCustomerPatch(f *testing.F) {
	for _, seed := range []string{
		``,
		`{}`,
		`[]`,
		`null`,
		`{`,
		`{} x`,
		`{"limitBytes":0,"maxSplats":null,"status":"active","billingState":"canceled"}`,
		`{"limitBytes":9223372036854775808,"maxSplats":-1,"status":null,"billingState":"x"}`,
		`{"displayName":"é","avatarUrl":"https://example.com/a","emailHash":"abcdefgh","metadata":{"a":1,"b":null}}`,
		`{"displayName":"","avatarUrl":"ftp://x","emailHash":"a b","metadata":{"a":{"b":[1]}}}`,
		`{"metadata":null,"displayName":null,"avatarUrl":null,"emailHash":null}`,
		`{"metadata":[],"keepSplatIds":["0123456789abcdef01234567","0123456789abcdef01234567"],"protectedSplatIds":[1]}`,
		`{"keepSplatIds":null,"protectedSplatIds":"x","unknown":true,"\u0000":1}`,
		"{\"displayName\":\"\xff\xfe\",\"avatarUrl\":\"http://[::1\"}",
		`{"avatarUrl":"http://%zz","metadata":{"k":1e999999}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseCustomerPatch(body)
		if err == nil {
			if p == nil {
				t.Fatal("nil patch without an error")
			}
			return
		}
		if p != nil {
			t.Fatal("patch returned with an error")
		}
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
	})
}
