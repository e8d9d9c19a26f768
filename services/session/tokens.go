package session

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"slices"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/credentials"
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
// customer scope and the optional end-user profile.
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

// errBadToken is every verification failure: the client learns only that the token is not
// valid, never which check failed.
var errBadToken = apperr.Unauthorized("invalid or expired session token")

// Parse verifies a token's signature, algorithm, key id, expiry and type and returns its
// claims. It does not look at the integration (see Verifier).
func (k *Keys) Parse(token string) (*Claims, error) {
	if len(token) > MaxTokenBytes {
		return nil, errBadToken
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
		return nil, errBadToken
	}
	if claims.Typ != TokenType || claims.IntegrationID == "" || claims.PublicKey == "" || claims.IssuedAt == nil ||
		len(claims.Capabilities) == 0 {
		return nil, errBadToken
	}
	for _, c := range claims.Capabilities {
		if c != TypeViewer && c != TypeEditor {
			return nil, errBadToken
		}
	}
	return &claims, nil
}

// IntegrationLookup finds the integration of a public key and the status of a customer;
// *credentials.Cache (the gateway's in-memory credential cache) implements it.
type IntegrationLookup interface {
	ByPublicKey(ctx context.Context, publicKey string) (*credentials.Integration, error)
	CustomerActive(ctx context.Context, integrationID, eu string) (bool, error)
}

// Verifier implements gateway.SessionVerifier: a session bearer becomes a caller of the
// session scheme.
type Verifier struct {
	keys         *Keys
	integrations IntegrationLookup
}

// NewVerifier returns the session verifier over the token keys and the integrations.
func NewVerifier(keys *Keys, integrations IntegrationLookup) *Verifier {
	return &Verifier{keys: keys, integrations: integrations}
}

// VerifySession checks a session token and that its integration is still the one holding its
// public key: a token naming another integration's key is forged (401) and a revoked
// integration's sessions end at once (410), as its keys do. The rights are those of now, not of
// the mint: the session keeps only the capabilities the integration still has, and a session
// scoped to a customer who is no longer active is marked so (it may view, not edit; see
// CustomerInactive). It costs no database round trip while the integration cache is live.
func (v *Verifier) VerifySession(ctx context.Context, token string) (*httpx.Caller, error) {
	claims, err := v.keys.Parse(token)
	if err != nil {
		return nil, err
	}
	in, err := v.integrations.ByPublicKey(ctx, claims.PublicKey)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if in == nil || in.ID != claims.IntegrationID {
		return nil, errBadToken
	}
	if in.Revoked {
		return nil, apperr.Gone("integration revoked")
	}
	caps := make([]string, 0, len(claims.Capabilities))
	for _, c := range claims.Capabilities {
		if slices.Contains(in.Capabilities, c) {
			caps = append(caps, c)
		}
	}
	caller := &httpx.Caller{
		Scheme: httpx.SchemeSession, IntegrationID: in.ID, AccountID: in.AccountID, ProductSlug: in.ProductSlug,
		PublicKey: in.PublicKey, Capabilities: caps,
		ExternalUserID: claims.ExternalUserID, HasExternalUser: claims.ExternalUserID != "",
		Session: map[string]any{claimSub: claims.Subject, claimSplatID: claims.SplatID},
	}
	// The end-user profile travels too: the multiplayer room shows it.
	if claims.Name != "" {
		caller.Session[claimName] = claims.Name
	}
	if claims.AvatarURL != nil {
		caller.Session[claimAvatar] = *claims.AvatarURL
	}
	// The expiry travels too: the room closes a participant whose token has ended.
	if claims.ExpiresAt != nil {
		caller.Session[claimExp] = claims.ExpiresAt.Unix()
	}
	if claims.ExternalUserID != "" {
		active, err := v.integrations.CustomerActive(ctx, in.ID, claims.ExternalUserID)
		if err != nil {
			return nil, apperr.Internal(err)
		}
		if !active {
			caller.Session[httpx.SessionCustomerInactive] = true
		}
	}
	return caller, nil
}

// Keys of httpx.Caller.Session: the claims the embed API needs after verification.
const (
	claimSub     = "sub"
	claimSplatID = "splatId"
)

// session is what a handler needs of a verified session.
type session struct {
	integrationID string
	productSlug   string
	// sub is the owner the session acts for; scoped says it is a customer (EU) record id.
	sub    string
	scoped bool
	eu     string
	// splatID pins a viewer session to one scene; viewerOnly says the pin applies.
	splatID    string
	viewerOnly bool
}

// sessionCaller returns the request's session, or a 401 for any other scheme.
func sessionCaller(caller *httpx.Caller) (*session, error) {
	if caller == nil || caller.Scheme != httpx.SchemeSession {
		return nil, apperr.Unauthorized("missing or invalid session token")
	}
	s := &session{integrationID: caller.IntegrationID, productSlug: caller.ProductSlug,
		scoped: caller.HasExternalUser, eu: caller.ExternalUserID,
		viewerOnly: !slices.Contains(caller.Capabilities, TypeEditor)}
	s.sub, _ = caller.Session[claimSub].(string)
	s.splatID, _ = caller.Session[claimSplatID].(string)
	return s, nil
}
