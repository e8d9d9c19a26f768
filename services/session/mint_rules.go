package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// Minting's rules and lookups, below the handler (mint.go): plain values in, a signed token or
// an apperr out, so each rule is tested without a request or a database.

// minter is the secret-key caller that mints: its account, integration and public key, the
// capabilities the integration has enabled, and the customer (EU) it names, if any.
type minter struct {
	accountID, integrationID, publicKey string
	capabilities                        []string
	eu                                  string
	hasEU                               bool
}

// mintToken applies the minting rules to req for m and signs the session: the key and the
// capability (checkMinter), the customer when EU is sent, the scene when splatId is sent. It
// returns the token and when it expires.
func (s *Service) mintToken(ctx context.Context, m minter, req *mintRequest) (string, time.Time, error) {
	if err := checkMinter(m, req); err != nil {
		return "", time.Time{}, err
	}
	var customer *ent.ExternalUser
	var err error
	if m.hasEU {
		if customer, err = s.activeCustomer(ctx, m.integrationID, m.eu); err != nil {
			return "", time.Time{}, err
		}
	}
	if req.splatID != "" {
		sc, err := s.mintScene(ctx, m.integrationID, req.splatID)
		if err != nil {
			return "", time.Time{}, err
		}
		if err := mintSceneRule(sc, req, customer); err != nil {
			return "", time.Time{}, err
		}
	}
	claims := mintClaims(s.now(), m, req, customer)
	token, err := s.keys.Sign(claims)
	if err != nil {
		return "", time.Time{}, apperr.Internal(err)
	}
	return token, claims.ExpiresAt.Time, nil
}

// checkMinter: the body's public key must be the caller's own (404 otherwise: an unknown key
// and another integration's key answer alike), and the integration must have the capability
// of the session's type enabled (403).
func checkMinter(m minter, req *mintRequest) error {
	if req.publicKey != m.publicKey {
		return apperr.NotFound("no integration for this public key")
	}
	if !slices.Contains(m.capabilities, req.typ) {
		return apperr.Forbidden("the " + req.typ + " capability is not enabled for this integration")
	}
	return nil
}

// mintClaims are the claims of the session req asks for, issued at now (to the second): a
// customer's session identifies the customer, a guest's an anonymous id for its lifetime.
func mintClaims(now time.Time, m minter, req *mintRequest, customer *ent.ExternalUser) *sessiontoken.Claims {
	now = now.Truncate(time.Second)
	claims := &sessiontoken.Claims{
		Typ: sessiontoken.TokenType,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: m.accountID, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(sessiontoken.Lifetime)),
		},
		IdentityUserID: anonymousID(),
		IntegrationID:  m.integrationID, PublicKey: m.publicKey,
		Capabilities: []string{req.typ}, SplatID: req.splatID, CoEdit: req.coEdit,
	}
	if customer != nil {
		claims.Subject, claims.IdentityUserID, claims.ExternalUserID = customer.ID, customer.ExternalUserID, customer.ExternalUserID
	}
	if req.hasUser {
		claims.Name, claims.AvatarURL = req.name, req.avatarURL
	}
	return claims
}

// activeCustomer returns the integration's customer eu when provisioned and active: the spec
// lets only such customers mint scoped sessions (403 otherwise, inactive or unknown alike; the
// code tells which).
func (s *Service) activeCustomer(ctx context.Context, integrationID, eu string) (*ent.ExternalUser, error) {
	u, err := s.db.Ent.ExternalUser.Query().
		Where(db.Customer(integrationID, eu)).
		Select(externaluser.FieldID, externaluser.FieldExternalUserID, externaluser.FieldStatus).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.CustomerNotProvisioned(http.StatusForbidden)
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if u.Status != externaluser.StatusActive {
		return nil, apperr.CustomerInactive(http.StatusForbidden, "external user is inactive")
	}
	return u, nil
}

// mintScene reads the fields mintSceneRule needs of a live scene of the integration; nil when
// there is none.
func (s *Service) mintScene(ctx context.Context, integrationID, id string) (*ent.Scene, error) {
	sc, err := s.db.Ent.Scene.Query().
		Where(scene.ID(id), scene.IntegrationID(integrationID), scene.ArchivedAtIsNil()).
		Select(scene.FieldID, scene.FieldOwnerID, scene.FieldVisibility, scene.FieldAllowEmbed).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return sc, nil
}

// mintSceneRule applies the splatId rules to sc, the live scene of the integration the id
// names (nil: none, 403 out of scope). An editor opens it for a customer, so it must be that
// customer's (EU required: 400 without it). A viewer may open the customer's own scene or a
// product-public one (public and embeddable); without EU only the latter (400: EU is required
// for anything else). An editor minted with coEdit is bound to the scene it names: the
// customer's own, or, named explicitly so, another customer's product-public scene (a guest's
// too), the only other kind its room admits.
func mintSceneRule(sc *ent.Scene, req *mintRequest, customer *ent.ExternalUser) error {
	if sc == nil {
		return errOutOfScope
	}
	typ := req.typ
	own := customer != nil && sc.OwnerID == customer.ID
	productPublic := sc.Visibility == scene.VisibilityPublic && sc.AllowEmbed
	switch {
	case own:
		return nil
	case req.coEdit && productPublic:
		return nil
	case typ == sessiontoken.TypeEditor && customer == nil:
		return errEURequired("an editor session that opens a scene")
	case typ == sessiontoken.TypeEditor:
		return errOutOfScope
	case productPublic:
		return nil
	case customer == nil && sc.Visibility != scene.VisibilityPublic:
		return errEURequired("a viewer session of a scene that is not public")
	}
	return errOutOfScope
}

// errOutOfScope is the spec's 403 for a splatId the session may not open.
var errOutOfScope = apperr.Forbidden("splatId is out of scope for this session")

func errEURequired(what string) error {
	return apperr.Invalid("missing "+httpx.ExternalUserHeader+" header",
		httpx.ExternalUserHeader+": required for "+what)
}

// anonymousID identifies a guest for the session's lifetime (identityUserId has to name
// someone; a guest has no id of its own).
func anonymousID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails on Linux since Go 1.24
	return "guest_" + hex.EncodeToString(b)
}
