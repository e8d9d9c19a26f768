package user

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splathost/splathost/internal/db"
)

// integrationsChannel is the Postgres NOTIFY channel every change to an integration is
// announced on, so each process drops its cached copy.
const integrationsChannel = "splathost_integrations"

// Integration is the part of an integration authentication needs.
type Integration struct {
	ID           string
	AccountID    string
	ProductSlug  string
	PublicKey    string
	SecretHash   []byte
	Capabilities []string
	RestAccess   bool
	Revoked      bool
}

// Integrations answers "which integration holds this key?" from memory, so authenticating a
// request costs no database round trip. Entries (including "no such key") live until a NOTIFY
// on integrationsChannel says something changed; while the LISTEN connection is down the cache
// is bypassed, because a missed notification would let a revoked key keep working.
type Integrations struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu       sync.RWMutex
	byPublic map[string]*Integration // nil value: known not to exist
	bySecret map[string]*Integration // keyed by string(hash)
	gen      uint64                  // bumped on every flush; stale loads are not cached
	live     atomic.Bool             // LISTEN connection is up
	loads    atomic.Int64            // database lookups, for tests and metrics
	// load reads one integration; the database query in production.
	load func(ctx context.Context, where string, arg any) (*Integration, error)
}

// NewIntegrations returns a cache over pool; call Listen to enable caching.
func NewIntegrations(pool *pgxpool.Pool, log *slog.Logger) *Integrations {
	s := &Integrations{pool: pool, log: log, byPublic: map[string]*Integration{}, bySecret: map[string]*Integration{}}
	s.load = s.loadRow
	return s
}

// ByPublicKey returns the integration owning publicKey, or nil when there is none.
func (s *Integrations) ByPublicKey(ctx context.Context, publicKey string) (*Integration, error) {
	if s.live.Load() {
		s.mu.RLock()
		in, ok := s.byPublic[publicKey]
		gen := s.gen
		s.mu.RUnlock()
		if ok {
			return in, nil
		}
		s.loads.Add(1)
		in, err := s.load(ctx, "public_key = $1", publicKey)
		if err != nil {
			return nil, err
		}
		// A header value from Fiber aliases a buffer fasthttp reuses for the next request; a map
		// key must own its bytes or the map silently corrupts.
		key := strings.Clone(publicKey)
		s.store(gen, func() { s.byPublic[key] = in })
		return in, nil
	}
	s.loads.Add(1)
	return s.load(ctx, "public_key = $1", publicKey)
}

// BySecret returns the integration whose secret key is secret, or nil when there is none.
func (s *Integrations) BySecret(ctx context.Context, secret string) (*Integration, error) {
	hash := HashSecret(secret)
	if s.live.Load() {
		key := string(hash)
		s.mu.RLock()
		in, ok := s.bySecret[key]
		gen := s.gen
		s.mu.RUnlock()
		if ok {
			return in, nil
		}
		s.loads.Add(1)
		in, err := s.load(ctx, "secret_hash = $1", hash)
		if err != nil {
			return nil, err
		}
		s.store(gen, func() { s.bySecret[key] = in })
		return in, nil
	}
	s.loads.Add(1)
	return s.load(ctx, "secret_hash = $1", hash)
}

// store caches a loaded entry unless a flush happened since the load began, which would mean
// the loaded row may already be stale.
func (s *Integrations) store(gen uint64, put func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == gen && len(s.byPublic)+len(s.bySecret) < 100_000 {
		put()
	}
}

func (s *Integrations) loadRow(ctx context.Context, where string, arg any) (*Integration, error) {
	var in Integration
	var revokedAt *time.Time
	err := s.pool.QueryRow(ctx, `SELECT id, account_id, product_slug, public_key, secret_hash,
		capabilities, rest_access, revoked_at FROM integrations WHERE `+where, arg).
		Scan(&in.ID, &in.AccountID, &in.ProductSlug, &in.PublicKey, &in.SecretHash, &in.Capabilities, &in.RestAccess, &revokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	in.Revoked = revokedAt != nil
	return &in, nil
}

// Flush drops every cached entry.
func (s *Integrations) Flush() {
	s.mu.Lock()
	s.byPublic = map[string]*Integration{}
	s.bySecret = map[string]*Integration{}
	s.gen++
	s.mu.Unlock()
}

// Listen keeps the cache's LISTEN connection until ctx ends, flushing the cache on every
// notification and on every reconnect. It returns when ctx is done.
func (s *Integrations) Listen(ctx context.Context) {
	db.Listen(ctx, s.pool, db.Listener{Channel: integrationsChannel, OnConnect: s.Flush,
		OnNotify: func(string) { s.Flush() }, Live: &s.live, Log: s.log})
}

// Loads is how many times an integration was read from the database.
func (s *Integrations) Loads() int64 { return s.loads.Load() }

// Live reports whether the cache is in use (its LISTEN connection is up).
func (s *Integrations) Live() bool { return s.live.Load() }
