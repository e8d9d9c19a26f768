// Package credentials is how a caller's keys are checked: the shape of public and secret keys
// (issued by the user service, refused early everywhere else), the hash stored instead of a
// secret, and the Cache that answers "which integration holds this key?" and "is this customer
// active?" from memory for the gateway and the session service, kept true by LISTEN/NOTIFY.
// Writers of integrations and customers announce their changes on Channel.
package credentials

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

// Channel is the Postgres NOTIFY channel every change to an integration is announced on (the
// payload is the integration's id), so each process drops its cached copy. A change of a
// customer's status is announced on it too, with CustomerNotice's payload, so that each process
// drops that customer's entry only.
const Channel = "splathost_integrations"

// customerNoticePrefix marks a notification about one customer's status.
const customerNoticePrefix = "customer:"

// CustomerNotice is the payload on Channel that announces a change of the status of the
// integration's customer eu.
func CustomerNotice(integrationID, eu string) string {
	return customerNoticePrefix + integrationID + ":" + eu
}

// DefaultCacheBytes is the memory budget of a Cache: about 40 000 integrations
// with both of their keys cached, far more than the processes of one deployment serve.
const DefaultCacheBytes = 32 << 20

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
	// Plan is the account's plan (free, pro, enterprise): the gateway's rate limit of the
	// integration depends on it. The operator's plan change announces itself on Channel.
	Plan string
}

// cost approximates the bytes in holds (the struct and what its fields point to).
func (in *Integration) cost() int64 {
	n := 128 + len(in.ID) + len(in.AccountID) + len(in.ProductSlug) + len(in.PublicKey) + len(in.SecretHash) + len(in.Plan)
	for _, c := range in.Capabilities {
		n += 16 + len(c)
	}
	return int64(n)
}

// cached is one cache entry: an integration (by public key or secret hash) or a customer's
// status (by integration and EU).
type cached struct {
	in     *Integration
	active bool
}

// Cache key prefixes: one byte budget holds the three kinds of entry.
const (
	keyPublic   = "p:"
	keySecret   = "s:"
	keyCustomer = "c:"
)

// Cache answers "which integration holds this key?" and "is this customer active?" from
// memory, so authenticating a request costs no database round trip. Only rows that exist are
// cached: a key that matches nothing is looked up every time (malformed keys never are, see
// ValidPublicKey), so what unauthenticated callers send cannot fill the cache. The cache is
// bounded by bytes and evicts its least recently used entries when full. Entries live until a
// NOTIFY on Channel says something changed (or the process that made the change
// drops them itself, see Flush and DropCustomer); while the LISTEN connection is down the cache
// is bypassed, because a missed notification would let a revoked key keep working.
type Cache struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu      sync.Mutex // an LRU read moves the entry, so every access writes
	entries *byteLRU[cached]
	// known are the keys (as in entries) of integrations known to exist, kept across Flush:
	// the keys KnownKeysOnly lets reach the database (known.go).
	known   map[string]struct{}
	gen     uint64        // bumped on every invalidation; loads that raced one are not cached
	live    atomic.Bool   // LISTEN connection is up
	backend atomic.Uint32 // backend pid of the LISTEN connection, for tests and diagnostics
	loads   atomic.Int64  // database lookups, for tests and metrics
	// load reads one integration; the database query in production.
	load func(ctx context.Context, where string, arg any) (*Integration, error)
	// loadKeys reads the keys of the live integrations, or of one (known.go).
	loadKeys func(ctx context.Context, integrationID string) ([]integrationKeys, error)
	// loadCustomer reads a customer's status; found is false when there is no such customer.
	loadCustomer func(ctx context.Context, integrationID, eu string) (active, found bool, err error)
	// health is how the LISTEN connection is checked (db.Listener's fields; zero: defaults).
	healthEvery, healthTimeout time.Duration
}

// NewCache returns a cache over pool with the DefaultCacheBytes budget; call Listen to
// enable caching.
func NewCache(pool *pgxpool.Pool, log *slog.Logger) *Cache {
	s := &Cache{pool: pool, log: log, entries: newByteLRU[cached](DefaultCacheBytes)}
	s.load = s.loadRow
	s.loadKeys = s.loadKeyRows
	s.loadCustomer = s.loadCustomerRow
	return s
}

// SetMaxBytes changes the cache's memory budget (tests; the binaries keep DefaultCacheBytes).
// Call it before the cache is used.
func (s *Cache) SetMaxBytes(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = newByteLRU[cached](n)
}

// SetHealthCheck changes how often an idle LISTEN connection is checked and how long the check
// may take (see db.Listener; the binaries keep the defaults, whose sum is the documented bound).
// Call it before Listen.
func (s *Cache) SetHealthCheck(every, timeout time.Duration) {
	s.healthEvery, s.healthTimeout = every, timeout
}

// ByPublicKey returns the integration owning publicKey, or nil when there is none.
func (s *Cache) ByPublicKey(ctx context.Context, publicKey string) (*Integration, error) {
	if !ValidPublicKey(publicKey) {
		return nil, nil
	}
	// A header value from Fiber aliases a buffer fasthttp reuses for the next request; a map
	// key must own its bytes or the map silently corrupts (the concatenation copies).
	return s.integration(ctx, keyPublic+publicKey, "public_key = $1", publicKey)
}

// BySecret returns the integration whose secret key is secret, or nil when there is none.
func (s *Cache) BySecret(ctx context.Context, secret string) (*Integration, error) {
	if !ValidSecretKey(secret) {
		return nil, nil
	}
	hash := HashSecret(secret)
	return s.integration(ctx, keySecret+string(hash), "secret_hash = $1", hash)
}

func (s *Cache) integration(ctx context.Context, key, where string, arg any) (*Integration, error) {
	if knownOnly(ctx) && !s.isKnown(key) {
		return nil, nil
	}
	e, err := s.lookup(key, func() (cached, int64, bool, error) {
		in, err := s.load(ctx, where, arg)
		if err != nil || in == nil {
			return cached{}, 0, false, err
		}
		s.remember(key)
		return cached{in: in}, in.cost(), true, nil
	})
	return e.in, err
}

// lookup serves key from the cache while the LISTEN connection is up (without it a change could
// go unseen, so every call loads). load returns the entry, its cost in bytes and whether the row
// exists; only rows that exist are stored: a miss is never cached, as it would let any caller
// fill the cache. An entry loaded across an invalidation (the generation moved) is not stored.
func (s *Cache) lookup(key string, load func() (e cached, cost int64, found bool, err error)) (cached, error) {
	if !s.live.Load() {
		s.loads.Add(1)
		e, _, _, err := load()
		return e, err
	}
	s.mu.Lock()
	e, ok := s.entries.get(key)
	gen := s.gen
	s.mu.Unlock()
	if ok {
		return e, nil
	}
	s.loads.Add(1)
	e, cost, found, err := load()
	if err == nil && found {
		s.store(gen, key, e, cost)
	}
	return e, err
}

// CustomerActive reports whether the integration's customer eu exists and is active: a session
// scoped to a customer checks it on every use, so that deactivating the customer takes its
// editing rights away at once (an inactive customer's session may only view).
func (s *Cache) CustomerActive(ctx context.Context, integrationID, eu string) (bool, error) {
	e, err := s.lookup(customerKey(integrationID, eu), func() (cached, int64, bool, error) {
		active, found, err := s.loadCustomer(ctx, integrationID, eu)
		return cached{active: active && found}, 0, found, err
	})
	return e.active, err
}

func customerKey(integrationID, eu string) string {
	return keyCustomer + integrationID + "\x00" + eu
}

// store caches a loaded entry unless an invalidation happened since the load began, which would
// mean the loaded row may already be stale.
func (s *Cache) store(gen uint64, key string, e cached, cost int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == gen {
		s.entries.put(key, e, cost)
	}
}

func (s *Cache) loadRow(ctx context.Context, where string, arg any) (*Integration, error) {
	var in Integration
	var revokedAt *time.Time
	err := s.pool.QueryRow(ctx, `SELECT i.id, i.account_id, i.product_slug, i.public_key, i.secret_hash,
		i.capabilities, i.rest_access, i.revoked_at, a.plan FROM integrations i JOIN accounts a ON a.id = i.account_id
		WHERE i.`+where, arg).
		Scan(&in.ID, &in.AccountID, &in.ProductSlug, &in.PublicKey, &in.SecretHash, &in.Capabilities, &in.RestAccess, &revokedAt, &in.Plan)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	in.Revoked = revokedAt != nil
	return &in, nil
}

func (s *Cache) loadCustomerRow(ctx context.Context, integrationID, eu string) (active, found bool, err error) {
	var status string
	err = s.pool.QueryRow(ctx, `SELECT status FROM external_users WHERE integration_id = $1 AND external_user_id = $2`,
		integrationID, eu).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return status == "active", true, nil
}

// Flush drops every cached entry. The process that changed an integration calls it before
// answering, so its own next request sees the change (read-your-writes); the others hear the
// NOTIFY.
func (s *Cache) Flush() {
	s.mu.Lock()
	s.entries.clear()
	s.gen++
	s.mu.Unlock()
}

// DropCustomer drops the cached status of the integration's customer eu; the process that
// changed it calls it before answering.
func (s *Cache) DropCustomer(integrationID, eu string) {
	s.mu.Lock()
	s.entries.remove(customerKey(integrationID, eu))
	s.gen++
	s.mu.Unlock()
}

// notified applies one notification: a customer's status, or anything about integrations.
func (s *Cache) notified(payload string) {
	if rest, ok := strings.CutPrefix(payload, customerNoticePrefix); ok {
		if integrationID, eu, ok := strings.Cut(rest, ":"); ok {
			s.DropCustomer(integrationID, eu)
			return
		}
	}
	s.Flush()
}

// Listen keeps the cache's LISTEN connection until ctx ends, flushing the cache on every
// notification and on every reconnect, and learning the keys that exist then (known.go). An
// idle connection is checked every few seconds (see db.Listener), so a connection that died
// without closing is replaced, and the cache flushed, within db.DefaultHealthEvery +
// db.DefaultHealthTimeout. It returns when ctx is done.
func (s *Cache) Listen(ctx context.Context) {
	db.Listen(ctx, s.pool, db.Listener{Channel: Channel,
		OnConnect: func() { s.Flush(); s.learn(ctx, "") },
		OnNotify: func(payload string) {
			s.notified(payload)
			if !strings.HasPrefix(payload, customerNoticePrefix) {
				s.learn(ctx, payload)
			}
		},
		Live: &s.live, Backend: &s.backend, Log: s.log,
		HealthEvery: s.healthEvery, HealthTimeout: s.healthTimeout})
}

// Loads is how many times an integration or customer was read from the database.
func (s *Cache) Loads() int64 { return s.loads.Load() }

// Live reports whether the cache is in use (its LISTEN connection is up).
func (s *Cache) Live() bool { return s.live.Load() }

// Bytes is the memory the cached entries are accounted at; it never exceeds the budget.
func (s *Cache) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries.used
}

// Len is the number of cached entries.
func (s *Cache) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries.len()
}

// ListenerBackend is the Postgres backend pid of the LISTEN connection (0 while there is none).
func (s *Cache) ListenerBackend() uint32 { return s.backend.Load() }
