package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/services/session"
)

// BareMintPath is the bare server's session mint route (the product's path).
const BareMintPath = "/api/editor/embed-sessions"

// bareMintHandler signs the same claims the product signs for an anonymous viewer session, with
// the product's signer, and answers the product's 201 body: the least any mint must do. It
// authenticates nothing and reads no database; the integration comes from BareIntegrationHeader
// and the public key from the request header the load generator sends anyway.
func bareMintHandler() (fiber.Handler, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	keys, err := session.NewKeys([]config.SessionKey{{ID: "bare", Secret: []byte(hex.EncodeToString(secret))}})
	if err != nil {
		return nil, err
	}
	return func(c *fiber.Ctx) error {
		now := time.Now().Truncate(time.Second)
		guest := make([]byte, 12)
		_, _ = rand.Read(guest)
		claims := &session.Claims{
			Typ: session.TokenType,
			RegisteredClaims: jwt.RegisteredClaims{Subject: "bare", IssuedAt: jwt.NewNumericDate(now),
				ExpiresAt: jwt.NewNumericDate(now.Add(session.Lifetime))},
			IdentityUserID: "guest_" + hex.EncodeToString(guest), IntegrationID: c.Get(BareIntegrationHeader),
			PublicKey: c.Get("X-Service-Public-Key"), Capabilities: []string{session.TypeViewer},
		}
		tok, err := keys.Sign(claims)
		if err != nil {
			return c.Status(fiber.StatusInternalServerError).JSON(fiber.Map{"status": "error", "message": "sign failed"})
		}
		return c.Status(fiber.StatusCreated).JSON(fiber.Map{"status": "success", "sessionToken": tok,
			"expiresAt": httpx.ISOTime(claims.ExpiresAt.Time)})
	}, nil
}

// mintSessions is P2: anonymous viewer session mints per second through the gateway (secret
// bearer authentication, body validation, capability check, signing) against the bare signer.
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
