// Package httpx is the HTTP plumbing shared by the gateway and the services: the caller identity
// the gateway establishes, its signed transport between processes, middleware, the error
// mapper, health endpoints and strict JSON decoding.
package httpx

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/idempotency"
)

// Scheme names how the gateway authenticated a request.
type Scheme string

// The authentication schemes of the interface, plus the operator's admin token.
const (
	SchemeKey     Scheme = "key"     // secret + public key (/api/v1/*)
	SchemeSecret  Scheme = "secret"  // secret bearer (embed-session minting)
	SchemeSession Scheme = "session" // session bearer (inside an embed)
	SchemeAdmin   Scheme = "admin"   // operator API
)

// CallerHeader carries the signed caller from a gateway to a service in another process. The
// gateway strips it from public requests, and services accept only a valid signature.
const CallerHeader = "X-Splathost-Caller"

// ExternalUserHeader is the interface's customer id header (EU in the spec).
const ExternalUserHeader = "X-Service-External-User-Id"

// PublicKeyHeader is the interface's public key header (PK in the spec).
const PublicKeyHeader = "X-Service-Public-Key"

// RequestIDHeader correlates a request across the gateway, the services and the logs.
const RequestIDHeader = "X-Request-Id"

// Caller is who is calling, as established by the gateway. Services trust it and never look at
// credentials themselves.
type Caller struct {
	Scheme        Scheme   `json:"s"`
	IntegrationID string   `json:"i,omitempty"`
	AccountID     string   `json:"a,omitempty"`
	ProductSlug   string   `json:"p,omitempty"`
	PublicKey     string   `json:"k,omitempty"`
	Capabilities  []string `json:"c,omitempty"`
	// ExternalUserID is the validated EU header; HasExternalUser tells an absent header from
	// an empty one (which the gateway rejects).
	ExternalUserID  string `json:"e,omitempty"`
	HasExternalUser bool   `json:"h,omitempty"`
	// Session holds the verified session-token claims for SchemeSession.
	Session map[string]any `json:"t,omitempty"`
	// Plan is the integration's account plan, which the gateway's rate limit depends on. It stays
	// in the gateway: no service decides anything by it.
	Plan string `json:"-"`
	// Fence names the Idempotency-Key claim this request holds (package idempotency): the
	// service records its answer under it in the transaction of its effect, so the outcome of a
	// keyed request survives the death of the process that ran it. Signed with the rest of the
	// caller, so no client can name another request's claim.
	Fence string `json:"f,omitempty"`
}

// SetFence gives the request's caller the idempotency fence and puts it in the request's
// context: in-process handlers read it there, and a forwarder signs it with the caller.
func SetFence(c *fiber.Ctx, fence string) {
	if caller := CallerOf(c); caller != nil {
		cp := *caller
		cp.Fence = fence
		SetCaller(c, &cp)
	}
	c.SetUserContext(idempotency.WithFence(c.UserContext(), fence))
}

const callerKey = "splathost.caller"

// SetCaller stores the caller for the handlers of this request.
func SetCaller(c *fiber.Ctx, caller *Caller) { c.Locals(callerKey, caller) }

// CallerOf returns the request's caller. A handler behind the gateway always has one; nil means
// the route was mounted without authentication, a wiring bug.
func CallerOf(c *fiber.Ctx) *Caller {
	caller, _ := c.Locals(callerKey).(*Caller)
	return caller
}

// RequireCaller returns the caller or a 401 when none was established.
func RequireCaller(c *fiber.Ctx) (*Caller, error) {
	caller := CallerOf(c)
	if caller == nil {
		return nil, apperr.Unauthorized("missing credentials")
	}
	return caller, nil
}

// RequireExternalUser returns the EU header value or the spec's 400 for a missing header.
func (c *Caller) RequireExternalUser() (string, error) {
	if !c.HasExternalUser {
		return "", apperr.Invalid("missing "+ExternalUserHeader+" header", ExternalUserHeader+": required")
	}
	return c.ExternalUserID, nil
}

// callerMaxAge bounds replay of a captured caller header inside the private network.
const callerMaxAge = 2 * time.Minute

// SignCaller encodes caller for CallerHeader: version, issue time, payload and an HMAC-SHA256
// over the three.
func SignCaller(secret []byte, caller *Caller, now time.Time) (string, error) {
	payload, err := json.Marshal(caller)
	if err != nil {
		return "", err
	}
	msg := "v1." + strconv.FormatInt(now.Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString(payload)
	return msg + "." + base64.RawURLEncoding.EncodeToString(mac(secret, msg)), nil
}

// VerifyCaller checks a CallerHeader value and returns the caller it carries.
func VerifyCaller(secret []byte, header string, now time.Time) (*Caller, error) {
	caller, _, err := verifyCaller(secret, header, now)
	return caller, err
}

// verifyCaller is VerifyCaller that also returns the header's signing time (unix seconds).
func verifyCaller(secret []byte, header string, now time.Time) (*Caller, int64, error) {
	i := strings.LastIndexByte(header, '.')
	if i < 0 || !strings.HasPrefix(header, "v1.") {
		return nil, 0, errors.New("malformed caller header")
	}
	msg, sig := header[:i], header[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(secret, msg)) {
		return nil, 0, errors.New("bad caller signature")
	}
	parts := strings.SplitN(msg, ".", 3)
	if len(parts) != 3 {
		return nil, 0, errors.New("malformed caller header")
	}
	ts, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return nil, 0, errors.New("malformed caller time")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > callerMaxAge || d < -callerMaxAge {
		return nil, 0, errors.New("caller header expired")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, 0, errors.New("malformed caller payload")
	}
	var caller Caller
	if err := json.Unmarshal(payload, &caller); err != nil {
		return nil, 0, errors.New("malformed caller payload")
	}
	return &caller, ts, nil
}

func mac(secret []byte, msg string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// callerCacheMax bounds the entries of a CallerSigner or a TrustSignedCaller cache; a full
// cache is emptied (its entries last a second or two anyway).
const callerCacheMax = 4096

// CallerSigner signs callers for CallerHeader like SignCaller, but reuses the header it signed
// for the same caller in the same second: under load one integration's requests carry the same
// caller many times a second, and the JSON encoding and the HMAC were about a tenth of a split
// gateway's CPU. Session callers (whose claims differ per token) and fenced ones (one claim per
// request) are signed every time.
type CallerSigner struct {
	secret []byte
	mu     sync.Mutex
	cache  map[signerKey]signedCaller
}

// signerKey is a non-session caller as a comparable value.
type signerKey struct {
	scheme                                                     Scheme
	integrationID, accountID, productSlug, publicKey, caps, eu string
	hasEU                                                      bool
}

// signedCaller is a header and the second it was signed in.
type signedCaller struct {
	unix   int64
	header string
}

// NewCallerSigner returns a signer with the internal secret.
func NewCallerSigner(secret []byte) *CallerSigner {
	return &CallerSigner{secret: secret, cache: map[signerKey]signedCaller{}}
}

// Sign returns the CallerHeader value of caller at now.
func (s *CallerSigner) Sign(caller *Caller, now time.Time) (string, error) {
	if caller.Session != nil || caller.Fence != "" {
		return SignCaller(s.secret, caller, now)
	}
	// The key's strings are the caller's own (a gateway builds a caller from its cache and a
	// cloned EU header), so the map may keep them.
	key := signerKey{scheme: caller.Scheme, integrationID: caller.IntegrationID, accountID: caller.AccountID,
		productSlug: caller.ProductSlug, publicKey: caller.PublicKey, caps: strings.Join(caller.Capabilities, ","),
		eu: caller.ExternalUserID, hasEU: caller.HasExternalUser}
	unix := now.Unix()
	s.mu.Lock()
	hit, ok := s.cache[key]
	s.mu.Unlock()
	if ok && hit.unix == unix {
		return hit.header, nil
	}
	header, err := SignCaller(s.secret, caller, now)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if len(s.cache) >= callerCacheMax {
		clear(s.cache)
	}
	s.cache[key] = signedCaller{unix: unix, header: header}
	s.mu.Unlock()
	return header, nil
}

// verifiedCaller is a caller header already verified, with its signing time.
type verifiedCaller struct {
	unix   int64
	caller Caller
}

// TrustSignedCaller is the middleware of a service running in its own process: it accepts a
// request only with a caller header signed by a gateway holding the same internal secret. A
// header it verified before (the gateway reuses one for a second, see CallerSigner) is taken
// from a cache keyed by the whole header, signature included, so only a header that once
// verified can hit; its age is checked at every use.
func TrustSignedCaller(secret []byte) fiber.Handler { return trustSignedCaller(secret, time.Now) }

// trustSignedCaller is TrustSignedCaller on a clock of the caller's choosing (tests).
func trustSignedCaller(secret []byte, clock func() time.Time) fiber.Handler {
	var mu sync.Mutex
	cache := map[string]verifiedCaller{}
	return func(c *fiber.Ctx) error {
		h := c.Get(CallerHeader)
		if h == "" {
			return apperr.Unauthorized("missing credentials")
		}
		now := clock()
		mu.Lock()
		hit, ok := cache[h]
		mu.Unlock()
		var caller *Caller
		if ok {
			if d := now.Sub(time.Unix(hit.unix, 0)); d > callerMaxAge || d < -callerMaxAge {
				return apperr.Unauthorized("invalid credentials")
			}
			// A copy: the handlers of this request get a caller of their own.
			cp := hit.caller
			caller = &cp
		} else {
			var err error
			var unix int64
			if caller, unix, err = verifyCaller(secret, h, now); err != nil {
				return apperr.Unauthorized("invalid credentials")
			}
			mu.Lock()
			if len(cache) >= callerCacheMax {
				clear(cache)
			}
			// Fiber's header string aliases a buffer reused by the next request: the key is cloned.
			cache[strings.Clone(h)] = verifiedCaller{unix: unix, caller: *caller}
			mu.Unlock()
		}
		SetCaller(c, caller)
		c.Locals(forwardedKey, true)
		if caller.Fence != "" {
			c.SetUserContext(idempotency.WithFence(c.UserContext(), caller.Fence))
		}
		return c.Next()
	}
}

// CapabilityEditor is the capability of an editor session (and of an integration that may mint
// one); only such a session may use the editor embed's routes.
const CapabilityEditor = "editor"

// SessionCustomerInactive is the Caller.Session key the gateway sets (to true) when the customer
// a session is scoped to is no longer active: such a session may still view, but not save,
// upload or publish. It is decided at each use, from the gateway's caches, not at mint.
const SessionCustomerInactive = "customerInactive"

// SessionID is the Caller.Session key of the session's id (sessiontoken.SessionID): what the
// rate limits of one session are kept under, in the gateway and in the session service.
const SessionID = "sid"

// SessionKey is the caller's session id, "" for a caller that is not a session.
func (c *Caller) SessionKey() string {
	v, _ := c.Session[SessionID].(string)
	return v
}

// CustomerInactive reports whether the caller is a session whose customer is no longer active.
func (c *Caller) CustomerInactive() bool {
	v, _ := c.Session[SessionCustomerInactive].(bool)
	return v
}

const sessionAsKeyKey = "splathost.sessionAsKey"

// AdmitSessionAsKey lets the rest of this request's handlers treat its session caller like a
// secret + public key caller with the session's EU: the editor embed's routes reuse the /api/v1
// handlers this way, so a scoped editor acts exactly as the v1 routes with that EU. The route
// must have checked the session (editor capability, customer scope) first.
func AdmitSessionAsKey(c *fiber.Ctx) { c.Locals(sessionAsKeyKey, true) }

// KeyCaller admits secret + public key callers (the /api/v1 scheme), and session callers of a
// route that admitted them with AdmitSessionAsKey.
func KeyCaller(c *fiber.Ctx) (*Caller, error) {
	caller := CallerOf(c)
	if caller == nil {
		return nil, apperr.Unauthorized("missing or invalid credentials")
	}
	admitted, _ := c.Locals(sessionAsKeyKey).(bool)
	if caller.Scheme != SchemeKey && (caller.Scheme != SchemeSession || !admitted) {
		return nil, apperr.Unauthorized("missing or invalid credentials")
	}
	return caller, nil
}

// IsSession reports whether the caller is an embed session (whose routes differ from the
// /api/v1 ones in a few fields: levelData, featured).
func (c *Caller) IsSession() bool { return c.Scheme == SchemeSession }

// KeyCallerWithEU is KeyCaller for endpoints that require the EU header (400 without it).
func KeyCallerWithEU(c *fiber.Ctx) (*Caller, string, error) {
	caller, err := KeyCaller(c)
	if err != nil {
		return nil, "", err
	}
	eu, err := caller.RequireExternalUser()
	if err != nil {
		return nil, "", err
	}
	return caller, eu, nil
}

// RequireAdmin refuses a request whose caller is not the operator (the gateway's admin token):
// every /admin route checks it again in its service, so a route reachable some other way is
// still closed.
func RequireAdmin(c *fiber.Ctx) error {
	caller := CallerOf(c)
	if caller == nil || caller.Scheme != SchemeAdmin {
		return apperr.Unauthorized("missing or invalid admin token")
	}
	return nil
}

// AdminOnly is RequireAdmin as the first handler of an operator route, so the handlers behind it
// start with the caller already checked.
func AdminOnly(c *fiber.Ctx) error {
	if err := RequireAdmin(c); err != nil {
		return err
	}
	return c.Next()
}

// SendRecorded sends the answer a keyed request's transaction recorded with its effect
// (idempotency.Record), so the answer the client gets is the one a retry would replay.
func SendRecorded(c *fiber.Ctx, r *idempotency.Recorded) error {
	c.Status(r.Status)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(r.Body)
}
