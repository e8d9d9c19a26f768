package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// Limits of the session body (spec, Limits).
const (
	maxUserName  = 64
	maxAvatarURL = 2048
	// maxPublicKey bounds what a client can make us compare; real keys are 47 characters.
	maxPublicKey = 256
)

// mintRequest is a validated POST /api/editor/embed-sessions body.
type mintRequest struct {
	publicKey string
	typ       string
	splatID   string
	// coEdit grants the right to change the drafts of the rooms the session joins (editor only).
	coEdit bool
	// hasUser says a profile was given; name and avatarURL are then signed into the token.
	hasUser   bool
	name      string
	avatarURL *string
}

// parseMint applies the body rules: publicKey required (mpk_ prefix), type 'viewer' or
// 'editor' (default 'editor'), splatId null or a 24-hex id, user null or {name: 1-64
// characters, avatarUrl: null or an absolute http(s) URL up to 2048 characters}, coEdit a
// boolean (true only for an editor: the right to change room drafts). Unknown fields
// are refused, as everywhere in the API, so a typo never passes silently.
func parseMint(body []byte) (*mintRequest, error) {
	f, err := httpx.DecodeObject(body, false)
	if err != nil {
		return nil, err
	}
	f.Only("publicKey", "type", "splatId", "user", "coEdit")
	f.Require("publicKey")
	f.NotNull("type")
	f.NotNull("coEdit")
	r := &mintRequest{typ: sessiontoken.TypeEditor}
	if pk, ok := f.String("publicKey", 1, maxPublicKey); ok {
		if !strings.HasPrefix(pk, credentials.PublicKeyPrefix) {
			f.Issuef("publicKey: must start with %s", credentials.PublicKeyPrefix)
		}
		r.publicKey = pk
	}
	if t, ok := f.Enum("type", sessiontoken.TypeViewer, sessiontoken.TypeEditor); ok {
		r.typ = t
	}
	if co, ok := f.Bool("coEdit"); ok {
		if co && r.typ != sessiontoken.TypeEditor {
			f.Issuef("coEdit: only an editor session joins a room; a viewer session cannot co-edit")
		}
		r.coEdit = co
	}
	if f.Has("splatId") && !f.IsNull("splatId") {
		if id, ok := f.String("splatId", 0, 1024); ok && ids.Valid(id) {
			r.splatID = strings.ToLower(id)
		} else if ok {
			f.Issuef("splatId: must be a 24-character hexadecimal scene id")
		}
	}
	r.hasUser = f.Object("user", func(u *httpx.Fields) {
		u.Only("name", "avatarUrl")
		u.Require("name")
		if name, ok := u.String("name", 1, maxUserName); ok {
			if strings.TrimSpace(name) == "" {
				u.Issuef("name: must not be blank")
			}
			r.name = name
		}
		if u.Has("avatarUrl") && !u.IsNull("avatarUrl") {
			if a, ok := u.String("avatarUrl", 1, maxAvatarURL); ok {
				if problem := httpx.HTTPURLProblem(a); problem != "" {
					u.Issuef("avatarUrl: %s", problem)
				}
				r.avatarURL = &a
			}
		}
	})
	if err := f.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// mint answers POST /api/editor/embed-sessions (secret bearer): 201 with a signed session
// token. Checks, in order: the body (400), the public key is this integration's (404: an
// unknown key and another integration's key answer alike), the capability (403), the customer
// when EU is sent (403 unless provisioned and active), the scene when splatId is sent (403 out
// of scope), and the EU rules (400 when EU is required but missing).
func (s *Service) mint(c *fiber.Ctx) error {
	caller := httpx.CallerOf(c)
	if caller == nil || caller.Scheme != httpx.SchemeSecret {
		return apperr.Unauthorized("missing or invalid Authorization header: expected Bearer <secret key>")
	}
	req, err := parseMint(c.Body())
	if err != nil {
		return err
	}
	if req.publicKey != caller.PublicKey {
		return apperr.NotFound("no integration for this public key")
	}
	if !slices.Contains(caller.Capabilities, req.typ) {
		return apperr.Forbidden("the " + req.typ + " capability is not enabled for this integration")
	}
	ctx := c.UserContext()
	var customer *ent.ExternalUser
	if caller.HasExternalUser {
		if customer, err = s.activeCustomer(ctx, caller.IntegrationID, caller.ExternalUserID); err != nil {
			return err
		}
	}
	if req.splatID != "" {
		if err := s.checkMintScene(ctx, caller.IntegrationID, req, customer); err != nil {
			return err
		}
	}
	now := s.now().Truncate(1e9)
	claims := &sessiontoken.Claims{
		Typ: sessiontoken.TokenType,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: caller.AccountID, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(sessiontoken.Lifetime)),
		},
		IdentityUserID: anonymousID(),
		IntegrationID:  caller.IntegrationID, PublicKey: caller.PublicKey,
		Capabilities: []string{req.typ}, SplatID: req.splatID, CoEdit: req.coEdit,
	}
	if customer != nil {
		claims.Subject, claims.IdentityUserID, claims.ExternalUserID = customer.ID, customer.ExternalUserID, customer.ExternalUserID
	}
	if req.hasUser {
		claims.Name, claims.AvatarURL = req.name, req.avatarURL
	}
	token, err := s.keys.Sign(claims)
	if err != nil {
		return apperr.Internal(err)
	}
	return c.Status(fiber.StatusCreated).JSON(mintResponse{Status: "success", SessionToken: token,
		ExpiresAt: httpx.ISOTime(claims.ExpiresAt.Time)})
}

// mintResponse is the 201 body; a struct, not a map, because minting is the hot path of every
// embed page load (P2).
type mintResponse struct {
	Status       string `json:"status"`
	SessionToken string `json:"sessionToken"`
	ExpiresAt    string `json:"expiresAt"`
}

// activeCustomer returns the integration's customer eu when provisioned and active: the spec
// lets only such customers mint scoped sessions (403 otherwise, inactive or unknown alike).
func (s *Service) activeCustomer(ctx context.Context, integrationID, eu string) (*ent.ExternalUser, error) {
	u, err := s.db.Ent.ExternalUser.Query().
		Where(db.Customer(integrationID, eu)).
		Select(externaluser.FieldID, externaluser.FieldExternalUserID, externaluser.FieldStatus).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.Forbidden("external user not provisioned or inactive")
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if u.Status != externaluser.StatusActive {
		return nil, apperr.Forbidden("external user not provisioned or inactive")
	}
	return u, nil
}

// checkMintScene applies the splatId rules. The scene must be a live scene of the integration
// (403 out of scope otherwise). An editor opens it for a customer, so it must be that
// customer's (EU required: 400 without it). A viewer may open the customer's own scene or a
// product-public one (public and embeddable); without EU only the latter (400: EU is required
// for anything else).
func (s *Service) checkMintScene(ctx context.Context, integrationID string, req *mintRequest, customer *ent.ExternalUser) error {
	sc, err := s.db.Ent.Scene.Query().
		Where(scene.ID(req.splatID), scene.IntegrationID(integrationID), scene.ArchivedAtIsNil()).
		Select(scene.FieldID, scene.FieldOwnerID, scene.FieldVisibility, scene.FieldAllowEmbed).Only(ctx)
	if ent.IsNotFound(err) {
		return errOutOfScope
	}
	if err != nil {
		return apperr.Internal(err)
	}
	own := customer != nil && sc.OwnerID == customer.ID
	productPublic := sc.Visibility == scene.VisibilityPublic && sc.AllowEmbed
	switch {
	case own:
		return nil
	case req.typ == sessiontoken.TypeEditor && customer == nil:
		return errEURequired("an editor session that opens a scene")
	case req.typ == sessiontoken.TypeEditor:
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
