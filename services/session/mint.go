package session

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/credentials"
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
	// coEdit grants the right to change the draft of the room of splatId, which it requires
	// (editor only).
	coEdit bool
	// hasUser says a profile was given; name and avatarURL are then signed into the token.
	hasUser   bool
	name      string
	avatarURL *string
}

// parseMint applies the body rules: publicKey required (mpk_ prefix), type 'viewer' or
// 'editor' (default 'editor'), splatId null or a 24-hex id, user null or {name: 1-64
// characters, avatarUrl: null or an absolute http(s) URL up to 2048 characters}, coEdit a
// boolean (true only for an editor with a splatId: the right to change that scene's room draft). Unknown fields
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
	if r.coEdit && r.typ == sessiontoken.TypeEditor && r.splatID == "" {
		f.Issuef("coEdit: requires splatId, the one scene the session may co-edit")
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// mint answers POST /api/editor/embed-sessions (secret bearer): 201 with a signed session
// token. Checks, in order: the body (400), then mintToken's: the public key is this
// integration's (404: an unknown key and another integration's key answer alike), the
// capability (403), the customer when EU is sent (403 unless provisioned and active), the scene
// when splatId is sent (403 out of scope), and the EU rules (400 when EU is required but missing).
func (s *Service) mint(c *fiber.Ctx) error {
	caller := httpx.CallerOf(c)
	if caller == nil || caller.Scheme != httpx.SchemeSecret {
		return apperr.Unauthorized("missing or invalid Authorization header: expected Bearer <secret key>")
	}
	req, err := parseMint(c.Body())
	if err != nil {
		return err
	}
	token, expires, err := s.mintToken(c.UserContext(), minterOf(caller), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(mintResponse{Status: "success", SessionToken: token, ExpiresAt: httpx.ISOTime(expires)})
}

// minterOf is what minting reads of a secret-key caller.
func minterOf(caller *httpx.Caller) minter {
	return minter{accountID: caller.AccountID, integrationID: caller.IntegrationID, publicKey: caller.PublicKey,
		capabilities: caller.Capabilities, eu: caller.ExternalUserID, hasEU: caller.HasExternalUser}
}

// mintResponse is the 201 body; a struct, not a map, because minting is the hot path of every
// embed page load (P2).
type mintResponse struct {
	Status       string `json:"status"`
	SessionToken string `json:"sessionToken"`
	ExpiresAt    string `json:"expiresAt"`
}
