package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/sessiontoken"
	"github.com/splathost/splathost/internal/testenv"
)

// BareMintPath is the bare server's session mint route (the product's path).
const BareMintPath = "/api/editor/embed-sessions"

// bareMint is the body the bare mint reads: the fields an anonymous viewer mint sends.
type bareMint struct {
	PublicKey string `json:"publicKey"`
	Type      string `json:"type"`
}

// bareMintHandler does what the product does for an anonymous viewer session and no more: the
// secret bearer authenticated (auth.secret: hash and in-memory lookup, as the gateway's cache
// hit), the body decoded and checked (the public key is the integration's, the type one of its
// capabilities), the same claims signed with the product's signer, and the product's 201 body.
func bareMintHandler(auth *bareAuth) (fiber.Handler, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	keys, err := sessiontoken.NewKeys([]config.SessionKey{{ID: "bare", Secret: []byte(hex.EncodeToString(secret))}})
	if err != nil {
		return nil, err
	}
	return func(c *fiber.Ctx) error {
		in, err := auth.secret(c)
		if err != nil {
			return refuse(c, err)
		}
		var req bareMint
		if err := json.Unmarshal(c.Body(), &req); err != nil || req.PublicKey != in.publicKey ||
			!slices.Contains(in.capabilities, req.Type) {
			return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"status": "error", "message": "bad request"})
		}
		now := time.Now().Truncate(time.Second)
		guest := make([]byte, 12)
		_, _ = rand.Read(guest)
		claims := &sessiontoken.Claims{
			Typ: sessiontoken.TokenType,
			RegisteredClaims: jwt.RegisteredClaims{Subject: in.accountID, IssuedAt: jwt.NewNumericDate(now),
				ExpiresAt: jwt.NewNumericDate(now.Add(sessiontoken.Lifetime))},
			IdentityUserID: "guest_" + hex.EncodeToString(guest), IntegrationID: in.id,
			PublicKey: in.publicKey, Capabilities: []string{req.Type},
		}
		tok, err := keys.Sign(claims)
		if err != nil {
			return c.Status(fiber.StatusInternalServerError).JSON(fiber.Map{"status": "error", "message": "sign failed"})
		}
		return c.Status(fiber.StatusCreated).JSON(bareMintAnswer{Status: "success", SessionToken: tok,
			ExpiresAt: httpx.ISOTime(claims.ExpiresAt.Time)})
	}, nil
}

// bareMintAnswer is the bare mint's 201 body, the product's shape.
type bareMintAnswer struct {
	Status       string `json:"status"`
	SessionToken string `json:"sessionToken"`
	ExpiresAt    string `json:"expiresAt"`
}

// mintSessions is P2: anonymous viewer session mints per second through the gateway (secret
// bearer authentication, body validation, capability check, signing) against the bare mint
// (bareMintHandler), which does the same.
func (r *runner) mintSessions(ctx context.Context, st *testenv.Stack, mode string, t Tenant, row *Row) {
	body, err := json.Marshal(map[string]any{"publicKey": t.PublicKey, "type": "viewer"})
	if err != nil {
		row.Err = err
		return
	}
	check := func(name, base, path string, extra map[string]string) error {
		h := t.Headers()
		for k, v := range extra {
			h[k] = v
		}
		resp, err := testenv.Do(base, http.MethodPost, path, h, string(body))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if tok, _ := resp.Body["sessionToken"].(string); resp.Status != http.StatusCreated || tok == "" {
			return fmt.Errorf("%s: status %d, want 201 with a sessionToken: %.300s", name, resp.Status, resp.Raw)
		}
		return nil
	}
	// Without the tenant's customer (EU): the measure is the anonymous viewer the spec calls
	// unmetered, the mint an embed page makes on every load.
	guest := t
	guest.ExternalUserID = ""
	r.compare(ctx, st, mode, guest, row, BareMintPath, BareMintPath, check,
		Request{Method: http.MethodPost, Body: body, Status: http.StatusCreated})
}
