package httpx

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
)

var (
	testSecret = []byte("0123456789abcdef-internal-secret")
	testNow    = time.Unix(1_800_000_000, 0)
)

func fullCaller() *Caller {
	return &Caller{
		Scheme: SchemeKey, IntegrationID: "0123456789abcdef01234567", AccountID: "89abcdef0123456789abcdef",
		ProductSlug: "shop.example", PublicKey: "mpk_abc", Capabilities: []string{"view", "edit"},
		ExternalUserID: "cust-é-42", HasExternalUser: true,
		Session: map[string]any{"typ": "service_embed_session", "sub": "x"},
	}
}

func sign(t *testing.T, secret []byte, c *Caller, at time.Time) string {
	t.Helper()
	h, err := SignCaller(secret, c, at)
	require.NoError(t, err)
	return h
}

func TestSignVerifyCallerRoundTrip(t *testing.T) {
	for _, c := range []*Caller{fullCaller(), {Scheme: SchemeAdmin}, {Scheme: SchemeKey, HasExternalUser: true}} {
		t.Run(string(c.Scheme), func(t *testing.T) {
			h := sign(t, testSecret, c, testNow)
			require.True(t, strings.HasPrefix(h, "v1."+strconv.FormatInt(testNow.Unix(), 10)+"."))
			require.NotContains(t, h, "\n")
			got, err := VerifyCaller(testSecret, h, testNow)
			require.NoError(t, err)
			require.Equal(t, c, got)
		})
	}
}

func TestVerifyCallerClock(t *testing.T) {
	tests := []struct {
		name   string
		skew   time.Duration // issue time relative to verification time
		wantOK bool
	}{
		{name: "now", skew: 0, wantOK: true},
		{name: "one minute old", skew: -time.Minute, wantOK: true},
		{name: "exactly two minutes old", skew: -2 * time.Minute, wantOK: true},
		{name: "just over two minutes old", skew: -2*time.Minute - time.Second, wantOK: false},
		{name: "an hour old", skew: -time.Hour, wantOK: false},
		{name: "a year old", skew: -365 * 24 * time.Hour, wantOK: false},
		{name: "slightly in the future", skew: 30 * time.Second, wantOK: true},
		{name: "two minutes in the future", skew: 2 * time.Minute, wantOK: true},
		{name: "over two minutes in the future", skew: 2*time.Minute + time.Second, wantOK: false},
		{name: "far future", skew: 100 * 365 * 24 * time.Hour, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := sign(t, testSecret, fullCaller(), testNow.Add(tt.skew))
			got, err := VerifyCaller(testSecret, h, testNow)
			if tt.wantOK {
				require.NoError(t, err)
				require.Equal(t, fullCaller(), got)
			} else {
				require.Error(t, err)
				require.Nil(t, got)
			}
		})
	}
}

// signRaw signs an arbitrary message the way SignCaller does, to reach the checks after the MAC.
func signRaw(secret []byte, msg string) string {
	return msg + "." + base64.RawURLEncoding.EncodeToString(mac(secret, msg))
}

func TestVerifyCallerRejects(t *testing.T) {
	good := sign(t, testSecret, fullCaller(), testNow)
	parts := strings.Split(good, ".")
	require.Len(t, parts, 4)
	ts := parts[1]
	other := sign(t, testSecret, &Caller{Scheme: SchemeAdmin}, testNow)

	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

	tests := []struct {
		name   string
		header string
		secret []byte
	}{
		{name: "empty", header: ""},
		{name: "garbage", header: "garbage"},
		{name: "no signature", header: strings.Join(parts[:3], ".")},
		{name: "empty signature", header: strings.Join(parts[:3], ".") + "."},
		{name: "signature not base64", header: strings.Join(parts[:3], ".") + ".!!!"},
		{name: "truncated signature", header: good[:len(good)-4]},
		{name: "wrong version", header: "v2." + strings.Join(parts[1:], ".")},
		{name: "wrong version re-signed", header: signRaw(testSecret, "v2."+ts+"."+parts[2])},
		{name: "tampered payload", header: strings.Join([]string{parts[0], parts[1], flip(parts[2], 5), parts[3]}, ".")},
		{name: "payload swapped from another header", header: strings.Join([]string{parts[0], parts[1], strings.Split(other, ".")[2], parts[3]}, ".")},
		{name: "tampered time", header: strings.Join([]string{parts[0], strconv.FormatInt(testNow.Unix()+1, 10), parts[2], parts[3]}, ".")},
		{name: "tampered signature", header: strings.Join([]string{parts[0], parts[1], parts[2], flip(parts[3], 3)}, ".")},
		{name: "wrong secret", header: good, secret: []byte("another-secret-of-enough-length")},
		{name: "empty secret", header: good, secret: []byte{}},
		{name: "signed with empty secret", header: sign(t, []byte{}, fullCaller(), testNow)},
		{name: "signed bad time", header: signRaw(testSecret, "v1.soon."+parts[2])},
		{name: "signed missing payload", header: signRaw(testSecret, "v1."+ts)},
		{name: "signed payload not base64", header: signRaw(testSecret, "v1."+ts+".***")},
		{name: "signed payload not JSON", header: signRaw(testSecret, "v1."+ts+"."+enc("not json"))},
		{name: "signed payload wrong JSON type", header: signRaw(testSecret, "v1."+ts+"."+enc(`[1,2]`))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := tt.secret
			if secret == nil {
				secret = testSecret
			}
			got, err := VerifyCaller(secret, tt.header, testNow)
			require.Error(t, err)
			require.Nil(t, got)
		})
	}
}

func TestTrustSignedCaller(t *testing.T) {
	app := fiber.New(fiber.Config{ErrorHandler: ErrorHandler(testLogger(new(bytes.Buffer)))})
	app.Use(TrustSignedCaller(testSecret))
	app.Get("/", func(c *fiber.Ctx) error {
		caller, err := RequireCaller(c)
		if err != nil {
			return err
		}
		return c.JSON(caller)
	})

	tests := []struct {
		name    string
		header  string
		status  int
		message string
	}{
		{name: "missing", header: "", status: 401, message: "missing credentials"},
		{name: "garbage", header: "v1.x.y.z", status: 401, message: "invalid credentials"},
		{name: "wrong secret", header: sign(t, []byte("another-secret-of-enough-length"), fullCaller(), time.Now()), status: 401, message: "invalid credentials"},
		{name: "expired", header: sign(t, testSecret, fullCaller(), time.Now().Add(-3*time.Minute)), status: 401, message: "invalid credentials"},
		{name: "future", header: sign(t, testSecret, fullCaller(), time.Now().Add(3*time.Minute)), status: 401, message: "invalid credentials"},
		{name: "valid", header: sign(t, testSecret, fullCaller(), time.Now()), status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.header != "" {
				req.Header.Set(CallerHeader, tt.header)
			}
			resp, body := doReq(t, app, req)
			require.Equal(t, tt.status, resp.StatusCode, "body: %s", body)
			if tt.status == 200 {
				require.JSONEq(t, mustJSON(t, fullCaller()), string(body))
				return
			}
			env, _ := decodeEnvelope(t, body)
			require.Equal(t, "error", env.Status)
			require.Equal(t, tt.message, env.Message)
		})
	}
}

func TestRequireCallerAndExternalUser(t *testing.T) {
	app := fiber.New(fiber.Config{ErrorHandler: ErrorHandler(testLogger(new(bytes.Buffer)))})
	app.Get("/none", func(c *fiber.Ctx) error {
		require.Nil(t, CallerOf(c))
		_, err := RequireCaller(c)
		return err
	})
	resp, body := doReq(t, app, httptest.NewRequest(http.MethodGet, "/none", nil))
	require.Equal(t, 401, resp.StatusCode, "body: %s", body)

	eu, err := (&Caller{}).RequireExternalUser()
	require.Empty(t, eu)
	e := require400(t, err)
	require.Equal(t, []string{ExternalUserHeader + ": required"}, e.Issues)

	eu, err = (&Caller{ExternalUserID: "c1", HasExternalUser: true}).RequireExternalUser()
	require.NoError(t, err)
	require.Equal(t, "c1", eu)
}

// A verified header is cached for its next uses, but its age is still checked at each one, and a
// header that differs in its signature alone is verified (and refused), not matched.
func TestTrustSignedCallerCache(t *testing.T) {
	clock := time.Now()
	app := fiber.New(fiber.Config{ErrorHandler: ErrorHandler(testLogger(new(bytes.Buffer)))})
	app.Use(trustSignedCaller(testSecret, func() time.Time { return clock }))
	app.Get("/", func(c *fiber.Ctx) error { return c.JSON(CallerOf(c)) })
	status := func(header string) int {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set(CallerHeader, header)
		resp, _ := doReq(t, app, req)
		return resp.StatusCode
	}
	header := sign(t, testSecret, fullCaller(), clock)
	require.Equal(t, 200, status(header))
	require.Equal(t, 200, status(header))
	forged := header[:len(header)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(header, "AA")]
	require.Equal(t, 401, status(forged))
	clock = clock.Add(3 * time.Minute)
	require.Equal(t, 401, status(header), "a cached header expires like any other")
}

// CallerSigner reuses a header within its second only, and every header it gives verifies to
// the caller it was asked to sign.
func TestCallerSigner(t *testing.T) {
	s := NewCallerSigner(testSecret)
	now := time.Unix(1_800_000_000, 0)
	key := fullCaller()
	key.Session = nil
	a, err := s.Sign(key, now)
	require.NoError(t, err)
	b, err := s.Sign(key, now.Add(500*time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.Len(t, s.cache, 1)
	c, err := s.Sign(key, now.Add(time.Second))
	require.NoError(t, err)
	require.NotEqual(t, a, c)
	other := fullCaller()
	other.Session = nil
	other.ExternalUserID = "someone-else"
	d, err := s.Sign(other, now)
	require.NoError(t, err)
	session, err := s.Sign(fullCaller(), now)
	require.NoError(t, err)
	require.Len(t, s.cache, 2, "session callers are signed every time, never cached")
	for h, want := range map[string]*Caller{a: key, c: key, d: other, session: fullCaller()} {
		got, err := VerifyCaller(testSecret, h, now.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}
