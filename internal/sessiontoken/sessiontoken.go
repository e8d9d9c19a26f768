// Package sessiontoken signs and verifies embed session tokens (HS256 JWTs with the spec's
// claims): the session service mints them, the gateway verifies them, and the benchmark's bare
// server signs the same tokens to measure against, so all three share this one implementation.
package sessiontoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
)

// TokenType is the typ claim of every embed session token (spec, Versioning).
const TokenType = "service_embed_session"

// Lifetime is the session token lifetime (spec, Limits: 900 seconds).
const Lifetime = 900 * time.Second

// Session types, which are also the capabilities a token carries.
const (
	TypeViewer = "viewer"
	TypeEditor = httpx.CapabilityEditor
)

// Claims are the session token's claims: the spec's table (typ, sub, identityUserId,
// integrationId, publicKey, capabilities, iat, exp), the splatId of contract item 5, the
// customer scope, the room's co-edit grant and the optional end-user profile.
type Claims struct {
	Typ string `json:"typ"`
	// RegisteredClaims carries iat, exp and sub. sub is the owner the session acts for: the
	// customer's record id when the session is scoped to a customer (EU), else the
	// integration's account (the spec's "the embed authenticates as the integration owner").
	jwt.RegisteredClaims
	// IdentityUserID is who is in the room: the EU when scoped, else an anonymous id minted
	// with the session.
	IdentityUserID string   `json:"identityUserId"`
	IntegrationID  string   `json:"integrationId"`
	PublicKey      string   `json:"publicKey"`
	Capabilities   []string `json:"capabilities"`
	// SplatID is the scene the session opens (contract item 5); a viewer may load only it.
	SplatID string `json:"splatId,omitempty"`
	// ExternalUserID is the customer (EU) the session is scoped to; empty for guests.
	ExternalUserID string `json:"externalUserId,omitempty"`
	// CoEdit is the integrator's grant to change the drafts of the multiplayer rooms the session
	// joins without owning their scenes (mint option coEdit, editor sessions only). Without it
	// only a session scoped to the scene's owner edits; the others are shown the room read-only.
	CoEdit bool `json:"coEdit,omitempty"`
	// Name and AvatarURL are the optional end-user profile (display identity only).
	Name      string  `json:"name,omitempty"`
	AvatarURL *string `json:"avatarUrl,omitempty"`
}

// Keys signs and verifies session tokens. The first configured key signs; every key verifies,
// looked up by the token's kid header, so rotating a key never breaks a live session.
type Keys struct {
	signer config.SessionKey
	byID   map[string][]byte
	parser *jwt.Parser
	// header is the signer's encoded JOSE header, the same for every token it signs; macs
	// pools its HMAC states. Minting signs on every embed page load (P2).
	header string
	macs   sync.Pool
}

// NewKeys returns the token keys of the configuration; at least one key is required.
func NewKeys(keys []config.SessionKey) (*Keys, error) {
	if len(keys) == 0 {
		return nil, errors.New("session: no session keys configured (SPLATHOST_SESSION_KEYS)")
	}
	k := &Keys{signer: keys[0], byID: make(map[string][]byte, len(keys))}
	for _, key := range keys {
		k.byID[key.ID] = key.Secret
	}
	header, err := json.Marshal(map[string]string{"alg": jwt.SigningMethodHS256.Alg(), "typ": "JWT", "kid": k.signer.ID})
	if err != nil {
		return nil, err
	}
	k.header = base64.RawURLEncoding.EncodeToString(header)
	k.macs.New = func() any { return hmac.New(sha256.New, k.signer.Secret) }
	// Only HS256 is ever accepted: "none", the other HMAC sizes and every asymmetric algorithm
	// (the classic public-key-as-HMAC-secret confusion) fail before any key is used.
	k.parser = jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	return k, nil
}

// Sign returns the signed token of claims (HS256), with the current key's id in the kid header.
// It writes what jwt.Token.SignedString writes, from the header encoded once and a pooled HMAC:
// the library encodes the header map and allocates two HMAC states on every call.
func (k *Keys) Sign(claims *Claims) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	n := len(k.header) + 1 + enc.EncodedLen(len(payload))
	b := make([]byte, 0, n+1+enc.EncodedLen(sha256.Size))
	b = append(b, k.header...)
	b = append(b, '.')
	b = enc.AppendEncode(b, payload)
	mac := k.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(b)
	var sum [sha256.Size]byte
	sig := mac.Sum(sum[:0])
	k.macs.Put(mac)
	b = append(b, '.')
	return string(enc.AppendEncode(b, sig)), nil
}

// MaxTokenBytes bounds a session token before it is decoded (base64, JSON, HMAC): a header or a
// query string can hold no more (the servers' 16 KiB read buffer), and the tokens mint signs stay
// well below it with every field at its limit (about 6 KiB of plain characters), so nothing larger is worth
// decoding.
const MaxTokenBytes = 16 << 10

// ErrInvalid is every verification failure: the client learns only that the token is not
// valid, never which check failed.
var ErrInvalid = apperr.Unauthorized("invalid or expired session token")

// Parse verifies a token's signature, algorithm, key id, expiry and type and returns its
// claims. It does not look at the integration (services/session's Verifier does).
func (k *Keys) Parse(token string) (*Claims, error) {
	if len(token) > MaxTokenBytes {
		return nil, ErrInvalid
	}
	var claims Claims
	_, err := k.parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		secret, ok := k.byID[kid]
		if !ok {
			return nil, errors.New("unknown kid")
		}
		return secret, nil
	})
	if err != nil {
		return nil, ErrInvalid
	}
	if claims.Typ != TokenType || claims.IntegrationID == "" || claims.PublicKey == "" || claims.IssuedAt == nil ||
		len(claims.Capabilities) == 0 {
		return nil, ErrInvalid
	}
	for _, c := range claims.Capabilities {
		if c != TypeViewer && c != TypeEditor {
			return nil, ErrInvalid
		}
	}
	return &claims, nil
}

// SessionID names one minted token without being one: the first 16 bytes of SHA-256 over the
// token, in hex. Every mint signs a new token, so it tells sessions apart (two tabs of one
// customer are two sessions); the rate limits of a session are kept under it.
func SessionID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:16])
}
