package user

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

// newKeyPair makes a public key and a secret key, each carrying 256 random bits.
func newKeyPair() (publicKey, secretKey string) {
	return PublicKeyPrefix + randomToken(32), SecretKeyPrefix + randomToken(32)
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

// Authenticate resolves a secret + public key pair. Both must belong to the same integration,
// else 401; a revoked integration answers 410 only to a caller holding its valid secret.
func (s *Integrations) Authenticate(ctx context.Context, publicKey, secret string) (*Integration, error) {
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
		return nil, apperr.Unauthorized("invalid credentials")
	}
	if in.Revoked {
		return nil, apperr.Gone("integration revoked")
	}
	return in, nil
}

// AuthenticateSecret resolves a secret bearer (embed-session minting).
func (s *Integrations) AuthenticateSecret(ctx context.Context, secret string) (*Integration, error) {
	in, err := s.BySecret(ctx, secret)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if in == nil {
		return nil, apperr.Unauthorized("invalid credentials")
	}
	if in.Revoked {
		return nil, apperr.Gone("integration revoked")
	}
	return in, nil
}
