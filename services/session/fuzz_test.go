package session

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// requireOKOr400 fails unless err is nil or a 400 naming its problems: no input may become a
// 500 or a panic.
func requireOKOr400(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *apperr.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || len(e.Issues) == 0 {
		t.Fatalf("want nil or a 400 with issues, got %v", err)
	}
}

func FuzzParseMint(f *testing.F) {
	for _, s := range []string{`{"publicKey":"mpk_x"}`, `{"publicKey":"mpk_x","type":"viewer","splatId":"aaaaaaaaaaaaaaaaaaaaaaaa","user":{"name":"A","avatarUrl":"https://a.b/c"}}`,
		`{"user":{"name":""}}`, `[]`, `{"publicKey":"mpk_\u0000"}`, `{"splatId":null,"user":null,"publicKey":"mpk_1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseMint(body)
		requireOKOr400(t, err)
		if err != nil {
			return
		}
		// What is accepted keeps every rule the token relies on.
		if !strings.HasPrefix(r.publicKey, "mpk_") || (r.typ != sessiontoken.TypeViewer && r.typ != sessiontoken.TypeEditor) ||
			(r.splatID != "" && !ids.Valid(r.splatID)) || utf8.RuneCountInString(r.name) > maxUserName ||
			(r.hasUser && strings.TrimSpace(r.name) == "") {
			t.Fatalf("accepted an invalid body %q as %+v", body, r)
		}
	})
}

func FuzzParseBeacon(f *testing.F) {
	for _, s := range []string{`{"splatId":"aaaaaaaaaaaaaaaaaaaaaaaa","visitorId":"v"}`, `{"visitorId":"\u0001"}`, `{}`, ``, `{"splatId":5}`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, withSplat bool) {
		b, err := parseBeacon(body, withSplat)
		requireOKOr400(t, err)
		if err != nil {
			return
		}
		if (withSplat && !ids.Valid(b.splatID)) || b.visitorID == "" || utf8.RuneCountInString(b.visitorID) > maxVisitorID ||
			strings.ContainsRune(b.visitorID, 0) {
			t.Fatalf("accepted an invalid beacon %q as %+v", body, b)
		}
	})
}
