package credentials

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"

	"github.com/splathost/splathost/internal/apperr"
)

// Key prefixes are part of the interface.
const (
	SecretKeyPrefix = "msk_"
	PublicKeyPrefix = "mpk_"
)

// keyRandomBytes is the randomness of every key; keyTokenLen is its unpadded base64url length.
const (
	keyRandomBytes = 32
	keyTokenLen    = (keyRandomBytes*8 + 5) / 6 // 43
)

// NewKeyPair makes a public key and a secret key, each carrying 256 random bits.
func NewKeyPair() (publicKey, secretKey string) {
	return PublicKeyPrefix + randomToken(keyRandomBytes), SecretKeyPrefix + randomToken(keyRandomBytes)
}

// ValidPublicKey reports whether s has the shape NewKeyPair gives a public key: mpk_ and 43
// characters of unpadded base64url encoding 32 bytes. Anything else cannot exist, so it is
// refused before any lookup: an unauthenticated caller must not make us query, hash or cache
// whatever a header can hold.
func ValidPublicKey(s string) bool { return validKey(s, PublicKeyPrefix) }

// ValidSecretKey is ValidPublicKey for a secret key (msk_).
func ValidSecretKey(s string) bool { return validKey(s, SecretKeyPrefix) }

func validKey(s, prefix string) bool {
	if len(s) != len(prefix)+keyTokenLen || s[:len(prefix)] != prefix {
		return false
	}
	tok := s[len(prefix):]
	for i := 0; i < len(tok); i++ {
		if base64URLValue(tok[i]) < 0 {
			return false
		}
	}
	// 256 bits fill 42 characters and 4 bits of the 43rd: its 2 low bits are always zero in
	// what the encoder writes (the canonical encoding).
	return base64URLValue(tok[len(tok)-1])&3 == 0
}

// base64URLValue is c's value in the base64url alphabet, or -1.
func base64URLValue(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '-':
		return 62
	case c == '_':
		return 63
	}
	return -1
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux since Go 1.24
	return base64.RawURLEncoding.EncodeToString(b)
}

// HashSecret is what the database stores instead of a secret key. A fast hash is right here:
// the key is 256 random bits, so there is nothing for a slow hash to protect against, and
// authentication stays off the request's critical path.
func HashSecret(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// secretMatches compares a presented secret with a stored hash in constant time.
func secretMatches(secret string, hash []byte) bool {
	got := HashSecret(secret)
	return subtle.ConstantTimeCompare(got, hash) == 1
}

// dummyHash is compared against when a public key is unknown, so the time a failed check takes
// does not tell whether the public key exists.
var dummyHash = HashSecret("msk_unknown")

// errInvalidCredentials is every failed key check: malformed, unknown, or not matching.
var errInvalidCredentials = apperr.Unauthorized("invalid credentials")

// Authenticate resolves a secret + public key pair. Both must belong to the same integration,
// else 401; a revoked integration answers 410 only to a caller holding its valid secret.
func (s *Cache) Authenticate(ctx context.Context, publicKey, secret string) (*Integration, error) {
	if !ValidPublicKey(publicKey) || !ValidSecretKey(secret) {
		// The same answer as an unknown key: the shape of a key is public, nothing else is told.
		return nil, errInvalidCredentials
	}
	in, err := s.ByPublicKey(ctx, publicKey)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	hash := dummyHash
	if in != nil {
		hash = in.SecretHash
	}
	if !secretMatches(secret, hash) || in == nil {
		// The public key is not a secret; naming it helps an operator see who is failing.
		s.log.DebugContext(ctx, "authentication failed", "publicKey", publicKey, "knownPublicKey", in != nil)
		return nil, errInvalidCredentials
	}
	if in.Revoked {
		return nil, apperr.Gone("integration revoked")
	}
	return in, nil
}

// AuthenticateSecret resolves a secret bearer (embed-session minting).
func (s *Cache) AuthenticateSecret(ctx context.Context, secret string) (*Integration, error) {
	if !ValidSecretKey(secret) {
		return nil, errInvalidCredentials
	}
	in, err := s.BySecret(ctx, secret)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if in == nil {
		return nil, errInvalidCredentials
	}
	if in.Revoked {
		return nil, apperr.Gone("integration revoked")
	}
	return in, nil
}
