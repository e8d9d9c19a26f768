package credentials

import (
	"crypto/sha256"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHashSecret(t *testing.T) {
	for _, s := range []string{"", "msk_a", "msk_" + strings.Repeat("x", 43)} {
		h := HashSecret(s)
		want := sha256.Sum256([]byte(s))
		require.Equal(t, want[:], h)
		require.Len(t, h, 32)
		require.Equal(t, h, HashSecret(s), "deterministic")
	}
	require.NotEqual(t, HashSecret("msk_a"), HashSecret("msk_b"))
	require.NotEqual(t, HashSecret("msk_a"), HashSecret("msk_a "))
}

func TestSecretMatches(t *testing.T) {
	stored := HashSecret("msk_right")
	tests := []struct {
		name   string
		secret string
		hash   []byte
		want   bool
	}{
		{name: "match", secret: "msk_right", hash: stored, want: true},
		{name: "wrong secret", secret: "msk_wrong", hash: stored},
		{name: "case differs", secret: "MSK_RIGHT", hash: stored},
		{name: "prefix of secret", secret: "msk_righ", hash: stored},
		{name: "empty secret", secret: "", hash: stored},
		{name: "nil hash", secret: "msk_right", hash: nil},
		{name: "empty hash", secret: "", hash: []byte{}},
		{name: "truncated hash", secret: "msk_right", hash: stored[:16]},
		{name: "raw secret stored instead of hash", secret: "msk_right", hash: []byte("msk_right")},
		{name: "dummy hash", secret: "msk_right", hash: dummyHash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, secretMatches(tt.secret, tt.hash))
		})
	}
}

func TestNewKeyPair(t *testing.T) {
	token := regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		pk, sk := NewKeyPair()
		require.True(t, strings.HasPrefix(pk, PublicKeyPrefix), pk)
		require.True(t, strings.HasPrefix(sk, SecretKeyPrefix), sk)
		require.Regexp(t, token, strings.TrimPrefix(pk, "mpk_"), "256 random bits, base64url")
		require.Regexp(t, token, strings.TrimPrefix(sk, "msk_"), "256 random bits, base64url")
		require.NotEqual(t, strings.TrimPrefix(pk, "mpk_"), strings.TrimPrefix(sk, "msk_"))
		require.False(t, seen[pk] || seen[sk], "keys repeat")
		seen[pk], seen[sk] = true, true
		require.True(t, secretMatches(sk, HashSecret(sk)))
	}
	require.Equal(t, "msk_", SecretKeyPrefix)
	require.Equal(t, "mpk_", PublicKeyPrefix)
}

func TestKeyShape(t *testing.T) {
	for i := 0; i < 200; i++ {
		pk, sk := NewKeyPair()
		require.True(t, ValidPublicKey(pk), pk)
		require.True(t, ValidSecretKey(sk), sk)
		require.False(t, ValidPublicKey(sk), "a secret key is not a public key")
		require.False(t, ValidSecretKey(pk), "a public key is not a secret key")
	}
	pk, _ := NewKeyPair()
	tok := pk[len(PublicKeyPrefix):]
	for _, tc := range []struct{ name, key string }{
		{"empty", ""},
		{"prefix only", "mpk_"},
		{"no prefix", tok},
		{"other prefix", "mpx_" + tok},
		{"upper-case prefix", "MPK_" + tok},
		{"one short", pk[:len(pk)-1]},
		{"one long", pk + "A"},
		{"oversized", PublicKeyPrefix + strings.Repeat("A", 15000)},
		{"padding", pk[:len(pk)-1] + "="},
		{"standard base64 alphabet", PublicKeyPrefix + strings.Repeat("+", keyTokenLen-1) + "A"},
		{"slash", PublicKeyPrefix + strings.Repeat("/", keyTokenLen-1) + "A"},
		{"space", PublicKeyPrefix + strings.Repeat(" ", keyTokenLen-1) + "A"},
		{"NUL", PublicKeyPrefix + strings.Repeat("\x00", keyTokenLen-1) + "A"},
		{"non-ASCII", PublicKeyPrefix + strings.Repeat("é", keyTokenLen/2) + "A"},
		{"non-canonical last character", PublicKeyPrefix + strings.Repeat("A", keyTokenLen-1) + "B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.False(t, ValidPublicKey(tc.key))
			require.False(t, ValidSecretKey(strings.Replace(tc.key, "mpk_", "msk_", 1)))
		})
	}
	require.True(t, ValidPublicKey(PublicKeyPrefix+strings.Repeat("_", keyTokenLen-1)+"w"))
}
