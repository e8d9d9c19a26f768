package bench

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splathost/splathost/internal/credentials"
)

// bareIntegration is what the bare server's authentication needs of an integration row.
type bareIntegration struct {
	id, accountID, productSlug, publicKey string
	secretHash                            [32]byte
	capabilities                          []string
	restAccess                            bool
}

// bareAuth authenticates the way the product's gateway does on a cache hit, and no cheaper: the
// key shapes checked, the secret hashed (SHA-256), the integration found in memory under a mutex
// (loaded from the same integrations table on first use), the hash compared in constant time,
// REST access and the EU header checked. A bare server that skipped this (as it once did) made
// the gateway look slower than it is by the cost of authentication, which any implementation pays.
type bareAuth struct {
	pool     *pgxpool.Pool
	mu       sync.Mutex
	byPublic map[string]*bareIntegration
	bySecret map[[32]byte]*bareIntegration
}

func newBareAuth(pool *pgxpool.Pool) *bareAuth {
	return &bareAuth{pool: pool, byPublic: map[string]*bareIntegration{}, bySecret: map[[32]byte]*bareIntegration{}}
}

// errBareAuth is every refused credential.
var errBareAuth = errors.New("invalid credentials")

// load reads one integration by a column and caches it under both keys.
func (a *bareAuth) load(ctx context.Context, where string, arg any) (*bareIntegration, error) {
	var in bareIntegration
	var hash []byte
	var revoked bool
	err := a.pool.QueryRow(ctx, `SELECT id, account_id, product_slug, public_key, secret_hash, capabilities, rest_access,
		revoked_at IS NOT NULL FROM integrations WHERE `+where, arg).
		Scan(&in.id, &in.accountID, &in.productSlug, &in.publicKey, &hash, &in.capabilities, &in.restAccess, &revoked)
	if errors.Is(err, pgx.ErrNoRows) || revoked || len(hash) != len(in.secretHash) {
		return nil, errBareAuth
	}
	if err != nil {
		return nil, err
	}
	copy(in.secretHash[:], hash)
	a.mu.Lock()
	a.byPublic[in.publicKey], a.bySecret[in.secretHash] = &in, &in
	a.mu.Unlock()
	return &in, nil
}

// bearerSecret is the secret key of an Authorization: Bearer header, shape-checked.
func bearerSecret(c *fiber.Ctx) (string, bool) {
	h := c.Get(fiber.HeaderAuthorization)
	if len(h) < 8 || !strings.EqualFold(h[:7], "bearer ") {
		return "", false
	}
	s := strings.TrimSpace(h[7:])
	return s, credentials.ValidSecretKey(s)
}

// keys authenticates a secret + public key pair (the /api/v1 scheme) and returns the
// integration and the EU header (checked: at most 256 bytes, no control characters).
func (a *bareAuth) keys(c *fiber.Ctx) (*bareIntegration, string, error) {
	secret, ok := bearerSecret(c)
	pk := c.Get("X-Service-Public-Key")
	if !ok || !credentials.ValidPublicKey(pk) {
		return nil, "", errBareAuth
	}
	hash := sha256.Sum256([]byte(secret))
	a.mu.Lock()
	in := a.byPublic[pk]
	a.mu.Unlock()
	if in == nil {
		var err error
		// The map key must own its bytes: Fiber's strings alias a reused buffer.
		if in, err = a.load(c.UserContext(), "public_key = $1", strings.Clone(pk)); err != nil {
			return nil, "", err
		}
	}
	if subtle.ConstantTimeCompare(hash[:], in.secretHash[:]) != 1 || !in.restAccess {
		return nil, "", errBareAuth
	}
	eu := c.Get(externalUserHeader)
	if len(eu) > 256 {
		return nil, "", errBareAuth
	}
	for i := 0; i < len(eu); i++ {
		if eu[i] < 0x20 || eu[i] == 0x7f {
			return nil, "", errBareAuth
		}
	}
	return in, eu, nil
}

// secret authenticates a secret bearer (the mint's scheme).
func (a *bareAuth) secret(c *fiber.Ctx) (*bareIntegration, error) {
	secret, ok := bearerSecret(c)
	if !ok {
		return nil, errBareAuth
	}
	hash := sha256.Sum256([]byte(secret))
	a.mu.Lock()
	in := a.bySecret[hash]
	a.mu.Unlock()
	if in == nil {
		return a.load(c.UserContext(), "secret_hash = $1", hash[:])
	}
	return in, nil
}

// refuse answers an authentication failure: 401, or 500 for a database failure.
func refuse(c *fiber.Ctx, err error) error {
	if errors.Is(err, errBareAuth) {
		return c.Status(fiber.StatusUnauthorized).JSON(fiber.Map{"status": "error", "message": "invalid credentials"})
	}
	return c.Status(fiber.StatusInternalServerError).JSON(fiber.Map{"status": "error", "message": "query failed"})
}
