package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func sign(t *testing.T, secret, id string, ts int64, body string) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestVerify(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another key of thirty-two bytes!"))
	now := time.Unix(1_800_000_000, 0)
	body := `{"type":"splat.created","timestamp":"2027-01-15T08:00:00.000Z","data":{}}`
	good := sign(t, secret, "msg1", now.Unix(), body)
	headers := func(id string, ts int64, sig string) http.Header {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		h.Set(HeaderSignature, sig)
		return h
	}
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   string
		want   error
	}{
		{"valid", secret, headers("msg1", now.Unix(), good), body, nil},
		{"valid among several (rotation)", secret, headers("msg1", now.Unix(), sign(t, other, "msg1", now.Unix(), body)+" "+good), body, nil},
		{"other secret", other, headers("msg1", now.Unix(), good), body, ErrInvalidSignature},
		{"body changed", secret, headers("msg1", now.Unix(), good), body + " ", ErrInvalidSignature},
		{"id changed", secret, headers("msg2", now.Unix(), good), body, ErrInvalidSignature},
		{"too old", secret, headers("msg1", now.Add(-6*time.Minute).Unix(), sign(t, secret, "msg1", now.Add(-6*time.Minute).Unix(), body)), body, ErrInvalidTimestamp},
		{"too new", secret, headers("msg1", now.Add(6*time.Minute).Unix(), sign(t, secret, "msg1", now.Add(6*time.Minute).Unix(), body)), body, ErrInvalidTimestamp},
		{"unknown version", secret, headers("msg1", now.Unix(), "v2,"+good[3:]), body, ErrInvalidSignature},
		{"no headers", secret, http.Header{}, body, ErrMissingHeaders},
		{"bad secret", "nope", headers("msg1", now.Unix(), good), body, ErrInvalidSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := verifyAt(tt.secret, tt.h, []byte(tt.body), now); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
