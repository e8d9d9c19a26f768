package session

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/sessiontoken"
)

var (
	currentKey  = config.SessionKey{ID: "k2", Secret: []byte(strings.Repeat("c", 32))}
	previousKey = config.SessionKey{ID: "k1", Secret: []byte(strings.Repeat("p", 32))}
)

// fakeIntegrations is the integration cache as the verifier sees it.
type fakeIntegrations map[string]*credentials.Integration

func (f fakeIntegrations) ByPublicKey(_ context.Context, pk string) (*credentials.Integration, error) {
	return f[pk], nil
}

// CustomerActive answers that every customer is active except those named "inactive-…".
func (f fakeIntegrations) CustomerActive(_ context.Context, _, eu string) (bool, error) {
	return !strings.HasPrefix(eu, "inactive-"), nil
}

var bothCapabilities = []string{sessiontoken.TypeViewer, sessiontoken.TypeEditor}

func testKeys(t *testing.T) *sessiontoken.Keys {
	t.Helper()
	k, err := sessiontoken.NewKeys([]config.SessionKey{currentKey, previousKey})
	require.NoError(t, err)
	return k
}

func validClaims(now time.Time) *sessiontoken.Claims {
	return &sessiontoken.Claims{
		Typ: sessiontoken.TokenType,
		RegisteredClaims: jwt.RegisteredClaims{Subject: "acc", IssuedAt: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(sessiontoken.Lifetime))},
		IdentityUserID: "guest_1", IntegrationID: "int-a", PublicKey: "mpk_a", Capabilities: []string{sessiontoken.TypeViewer},
	}
}

// signWith signs claims with any method, key and kid, as an attacker would.
func signWith(t *testing.T, m jwt.SigningMethod, key any, kid string, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// rawToken assembles header.payload.signature by hand (for alg none and malformed headers).
func rawToken(t *testing.T, header, payload any, sig string) string {
	t.Helper()
	h, err := json.Marshal(header)
	require.NoError(t, err)
	p, err := json.Marshal(payload)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "." + sig
}

func TestVerifySessionAcceptsCurrentAndPreviousKeys(t *testing.T) {
	k := testKeys(t)
	v := NewVerifier(k, fakeIntegrations{"mpk_a": {ID: "int-a", AccountID: "acc", ProductSlug: "shop", PublicKey: "mpk_a", Capabilities: bothCapabilities}})
	c := validClaims(time.Now())
	c.SplatID, c.ExternalUserID, c.Subject = "aaaaaaaaaaaaaaaaaaaaaaaa", "cust-1", "rec-1"
	tok, err := k.Sign(c)
	require.NoError(t, err)
	caller, err := v.VerifySession(context.Background(), tok)
	require.NoError(t, err)
	require.Equal(t, &httpx.Caller{Scheme: httpx.SchemeSession, IntegrationID: "int-a", AccountID: "acc", ProductSlug: "shop",
		PublicKey: "mpk_a", Capabilities: []string{sessiontoken.TypeViewer}, ExternalUserID: "cust-1", HasExternalUser: true,
		Session: map[string]any{"sub": "rec-1", "splatId": "aaaaaaaaaaaaaaaaaaaaaaaa", "exp": c.ExpiresAt.Unix(),
			httpx.SessionID: sessiontoken.SessionID(tok)}}, caller)
	// The session id names this token: another mint of the same claims is another session.
	again, err := k.Sign(validClaims(time.Now().Add(time.Second)))
	require.NoError(t, err)
	require.NotEqual(t, caller.SessionKey(), sessiontoken.SessionID(again))
	require.Len(t, caller.SessionKey(), 32)
	// The expiry survives the signed caller header (a JSON number there), so a split session
	// service's room closes the participant at the same instant.
	require.Equal(t, c.ExpiresAt.Unix(), sessionExpiry(caller.Session).Unix())
	header, err := httpx.SignCaller([]byte("internal-secret-internal-secret!"), caller, time.Now())
	require.NoError(t, err)
	relayed, err := httpx.VerifyCaller([]byte("internal-secret-internal-secret!"), header, time.Now())
	require.NoError(t, err)
	require.Equal(t, c.ExpiresAt.Unix(), sessionExpiry(relayed.Session).Unix())
	require.True(t, sessionExpiry(map[string]any{}).IsZero())

	// A token signed with the previous key (before a rotation) still verifies.
	old := signWith(t, jwt.SigningMethodHS256, previousKey.Secret, previousKey.ID, validClaims(time.Now()))
	_, err = v.VerifySession(context.Background(), old)
	require.NoError(t, err)

	// The kid header names the key that signed.
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, &sessiontoken.Claims{})
	require.NoError(t, err)
	require.Equal(t, currentKey.ID, parsed.Header["kid"])
}

func TestVerifySessionRejectsEveryAttack(t *testing.T) {
	k := testKeys(t)
	ints := fakeIntegrations{
		"mpk_a":       {ID: "int-a", PublicKey: "mpk_a", Capabilities: bothCapabilities},
		"mpk_b":       {ID: "int-b", PublicKey: "mpk_b"},
		"mpk_revoked": {ID: "int-r", PublicKey: "mpk_revoked", Revoked: true},
	}
	v := NewVerifier(k, ints)
	now := time.Now()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	with := func(edit func(c *sessiontoken.Claims)) *sessiontoken.Claims {
		c := validClaims(now)
		edit(c)
		return c
	}
	hs := func(c jwt.Claims) string {
		return signWith(t, jwt.SigningMethodHS256, currentKey.Secret, currentKey.ID, c)
	}
	valid := hs(validClaims(now))
	parts := strings.Split(valid, ".")

	cases := []struct {
		name   string
		token  string
		status int
	}{
		{"alg none", rawToken(t, map[string]any{"alg": "none", "typ": "JWT", "kid": currentKey.ID}, validClaims(now), ""), 401},
		{"alg none, signature kept", rawToken(t, map[string]any{"alg": "none", "kid": currentKey.ID}, validClaims(now), parts[2]), 401},
		{"HS384 with the right key", signWith(t, jwt.SigningMethodHS384, currentKey.Secret, currentKey.ID, validClaims(now)), 401},
		{"HS512 with the right key", signWith(t, jwt.SigningMethodHS512, currentKey.Secret, currentKey.ID, validClaims(now)), 401},
		{"RS256", signWith(t, jwt.SigningMethodRS256, rsaKey, currentKey.ID, validClaims(now)), 401},
		{"wrong key, known kid", signWith(t, jwt.SigningMethodHS256, []byte(strings.Repeat("w", 32)), currentKey.ID, validClaims(now)), 401},
		{"previous key under the current kid", signWith(t, jwt.SigningMethodHS256, previousKey.Secret, currentKey.ID, validClaims(now)), 401},
		{"unknown kid", signWith(t, jwt.SigningMethodHS256, currentKey.Secret, "k9", validClaims(now)), 401},
		{"no kid", signWith(t, jwt.SigningMethodHS256, currentKey.Secret, "", validClaims(now)), 401},
		{"expired", hs(with(func(c *sessiontoken.Claims) {
			c.IssuedAt, c.ExpiresAt = jwt.NewNumericDate(now.Add(-20*time.Minute)), jwt.NewNumericDate(now.Add(-5*time.Minute))
		})), 401},
		{"no exp", hs(with(func(c *sessiontoken.Claims) { c.ExpiresAt = nil })), 401},
		{"no iat", hs(with(func(c *sessiontoken.Claims) { c.IssuedAt = nil })), 401},
		{"issued in the future", hs(with(func(c *sessiontoken.Claims) { c.IssuedAt = jwt.NewNumericDate(now.Add(10 * time.Minute)) })), 401},
		{"other typ", hs(with(func(c *sessiontoken.Claims) { c.Typ = "service_api" })), 401},
		{"no typ", hs(with(func(c *sessiontoken.Claims) { c.Typ = "" })), 401},
		{"unknown capability", hs(with(func(c *sessiontoken.Claims) { c.Capabilities = []string{"admin"} })), 401},
		{"no capabilities", hs(with(func(c *sessiontoken.Claims) { c.Capabilities = nil })), 401},
		{"integration of another public key", hs(with(func(c *sessiontoken.Claims) { c.PublicKey = "mpk_b" })), 401},
		{"unknown public key", hs(with(func(c *sessiontoken.Claims) { c.PublicKey = "mpk_zzz" })), 401},
		{"no integration", hs(with(func(c *sessiontoken.Claims) { c.IntegrationID = "" })), 401},
		{"revoked integration", hs(with(func(c *sessiontoken.Claims) { c.PublicKey, c.IntegrationID = "mpk_revoked", "int-r" })), 410},
		{"tampered payload", parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"service_embed_session","integrationId":"int-b","publicKey":"mpk_b","capabilities":["editor"],"iat":1,"exp":9999999999}`)) + "." + parts[2], 401},
		{"signature stripped", parts[0] + "." + parts[1] + ".", 401},
		{"garbage", "not-a-jwt", 401},
		{"secret key as token", "msk_abc", 401},
		{"oversized", valid + strings.Repeat("A", sessiontoken.MaxTokenBytes), 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			caller, err := v.VerifySession(context.Background(), tc.token)
			require.Nil(t, caller)
			require.Error(t, err)
			require.Equal(t, tc.status, apperr.From(err).Status, err.Error())
		})
	}
}

// TestVerifySessionGrantsTodaysRights: rights are those of the request, not of the mint. An
// integration that lost a capability takes it from its live sessions, and a session whose
// customer is no longer active is marked so.
func TestVerifySessionGrantsTodaysRights(t *testing.T) {
	k := testKeys(t)
	ints := fakeIntegrations{"mpk_a": {ID: "int-a", PublicKey: "mpk_a", Capabilities: bothCapabilities}}
	v := NewVerifier(k, ints)
	c := validClaims(time.Now())
	c.Capabilities, c.ExternalUserID = []string{sessiontoken.TypeEditor}, "cust-1"
	tok, err := k.Sign(c)
	require.NoError(t, err)
	caller, err := v.VerifySession(context.Background(), tok)
	require.NoError(t, err)
	require.Equal(t, []string{sessiontoken.TypeEditor}, caller.Capabilities)
	require.False(t, caller.CustomerInactive())

	ints["mpk_a"].Capabilities = []string{sessiontoken.TypeViewer}
	caller, err = v.VerifySession(context.Background(), tok)
	require.NoError(t, err)
	require.Empty(t, caller.Capabilities, "the editor capability is gone")

	c.ExternalUserID = "inactive-1"
	tok, err = k.Sign(c)
	require.NoError(t, err)
	caller, err = v.VerifySession(context.Background(), tok)
	require.NoError(t, err)
	require.True(t, caller.CustomerInactive())
}

// TestMintedTokensFitTheBound: a token with every field at its limit stays under sessiontoken.MaxTokenBytes,
// so the bound refuses only what mint never signs.
func TestMintedTokensFitTheBound(t *testing.T) {
	k := testKeys(t)
	c := validClaims(time.Now())
	eu := strings.Repeat("\U0001F600", 256) // 256 characters of 4 bytes each
	avatar := "https://a.example/" + strings.Repeat("a", maxAvatarURL-len("https://a.example/"))
	c.ExternalUserID, c.IdentityUserID, c.Name, c.AvatarURL = eu, eu, strings.Repeat("é", maxUserName), &avatar
	c.Subject, c.SplatID, c.Capabilities = strings.Repeat("a", 24), strings.Repeat("b", 24), []string{sessiontoken.TypeEditor}
	tok, err := k.Sign(c)
	require.NoError(t, err)
	require.Less(t, len(tok), sessiontoken.MaxTokenBytes, "%d bytes", len(tok))
	t.Logf("largest token: %d bytes", len(tok))
	_, err = k.Parse(tok)
	require.NoError(t, err)
}

// The coEdit grant reaches the room through the verifier and the signed caller header of a
// split session service; a token without it grants nothing.
func TestCoEditTravelsToTheRoom(t *testing.T) {
	k := testKeys(t)
	v := NewVerifier(k, fakeIntegrations{"mpk_a": {ID: "int-a", PublicKey: "mpk_a", Capabilities: bothCapabilities}})
	c := validClaims(time.Now())
	c.Capabilities = []string{sessiontoken.TypeEditor}
	plain, err := k.Sign(c)
	require.NoError(t, err)
	c.CoEdit = true
	co, err := k.Sign(c)
	require.NoError(t, err)
	secret := []byte("internal-secret-internal-secret!")
	for tok, want := range map[string]bool{plain: false, co: true} {
		caller, err := v.VerifySession(context.Background(), tok)
		require.NoError(t, err)
		header, err := httpx.SignCaller(secret, caller, time.Now())
		require.NoError(t, err)
		relayed, err := httpx.VerifyCaller(secret, header, time.Now())
		require.NoError(t, err)
		for _, cl := range []*httpx.Caller{caller, relayed} {
			ss, err := sessionCaller(cl)
			require.NoError(t, err)
			require.Equal(t, want, ss.coEdit)
		}
	}
}

// A joined participant's rights are those of now: each ended right has its own refusal.
func TestRoomRightsCheck(t *testing.T) {
	ints := fakeIntegrations{
		"mpk_a":       {ID: "int-a", PublicKey: "mpk_a", Capabilities: bothCapabilities},
		"mpk_revoked": {ID: "int-r", PublicKey: "mpk_revoked", Capabilities: bothCapabilities, Revoked: true},
		"mpk_viewer":  {ID: "int-v", PublicKey: "mpk_viewer", Capabilities: []string{sessiontoken.TypeViewer}},
	}
	r := &Rooms{creds: ints}
	now := time.Now()
	for _, tt := range []struct {
		name string
		rt   rights
		want error
	}{
		{"live guest", rights{integrationID: "int-a", publicKey: "mpk_a"}, nil},
		{"live customer", rights{integrationID: "int-a", publicKey: "mpk_a", eu: "ada", expires: now.Add(time.Minute)}, nil},
		{"expired", rights{integrationID: "int-a", publicKey: "mpk_a", expires: now.Add(-time.Second)}, errSessionExpired},
		{"revoked", rights{integrationID: "int-r", publicKey: "mpk_revoked"}, errRevoked},
		{"key of another integration", rights{integrationID: "int-b", publicKey: "mpk_a"}, errKeyGone},
		{"key gone", rights{integrationID: "int-a", publicKey: "mpk_gone"}, errKeyGone},
		{"editor capability removed", rights{integrationID: "int-v", publicKey: "mpk_viewer"}, errEditorDisabled},
		{"customer inactive", rights{integrationID: "int-a", publicKey: "mpk_a", eu: "inactive-ada"}, errCustomerInactive},
	} {
		memo := &rightsMemo{integrations: map[string]*credentials.Integration{}, customers: map[string]bool{}}
		for _, m := range []*rightsMemo{nil, memo, memo} {
			require.Equal(t, tt.want, r.check(context.Background(), &tt.rt, now, m), tt.name)
		}
	}
	// The codes a browser sees.
	require.Equal(t, 4410, httpx.CloseCode(errRevoked))
	require.Equal(t, 4403, httpx.CloseCode(errCustomerInactive))
	require.Equal(t, "CUSTOMER_INACTIVE", httpx.ErrorCode(errCustomerInactive))
	require.Equal(t, 4401, httpx.CloseCode(errSessionExpired))
	require.Equal(t, 4404, httpx.CloseCode(errSceneGone))
}
