package sessiontoken

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/config"
)

func TestNewKeysNeedsAKey(t *testing.T) {
	_, err := NewKeys(nil)
	require.Error(t, err)
}

// Sign writes its tokens without the JWT library's encoder (the mint's hot path): they must be
// the library's tokens byte for byte, and verify.
func TestSignMatchesTheLibrary(t *testing.T) {
	keys, err := NewKeys([]config.SessionKey{{ID: "k2026", Secret: []byte("0123456789abcdef0123456789abcdef")}})
	require.NoError(t, err)
	now := time.Now().Truncate(time.Second)
	avatar := "https://example.com/a.png"
	for _, claims := range []*Claims{
		{Typ: TokenType, RegisteredClaims: jwt.RegisteredClaims{Subject: "acct", IssuedAt: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(Lifetime))}, IdentityUserID: "guest_1", IntegrationID: "int",
			PublicKey: "mpk_x", Capabilities: []string{TypeViewer}},
		{Typ: TokenType, RegisteredClaims: jwt.RegisteredClaims{Subject: "cust", IssuedAt: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(Lifetime))}, IdentityUserID: "eu", IntegrationID: "int",
			PublicKey: "mpk_x", Capabilities: []string{TypeEditor}, SplatID: "abc", ExternalUserID: "eu",
			Name: "Ann \"<&>\"", AvatarURL: &avatar},
	} {
		got, err := keys.Sign(claims)
		require.NoError(t, err)
		lib := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
		lib.Header["kid"] = "k2026"
		want, err := lib.SignedString([]byte("0123456789abcdef0123456789abcdef"))
		require.NoError(t, err)
		require.Equal(t, want, got)
		parsed, err := keys.Parse(got)
		require.NoError(t, err)
		require.Equal(t, claims.IdentityUserID, parsed.IdentityUserID)
	}
}
