package credentials

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Known keys: the gateway's answer to an address that has used up its failure allowance
// (docs/security.md, "Rate limits"). Such an address is refused everything that does not
// authenticate, and checking a key it sends must cost no database lookup, or refusing it would
// cost what the allowance saves; yet an integrator behind the same address (a cloud NAT's egress)
// must still be served. A key's lookup is free when the key is cached; the cache is flushed on
// every change to any integration, so the Cache also keeps, across flushes, the set of keys that
// exist: those may be looked up, and any other key is taken as unknown. The set holds the keys
// of every live integration, read when the LISTEN connection is made, those of an integration
// whose change is announced (a new one's included), and every key a lookup found.

// maxKnownKeys bounds the remembered keys (two an integration: public key and secret hash),
// about 100 bytes each. Past it the set starts again empty: keys are then learnt again as
// they are used. The read at connect takes at most half of it.
const maxKnownKeys = 100_000

// integrationKeys are the two keys of one integration.
type integrationKeys struct {
	publicKey  string
	secretHash []byte
}

// learn remembers the keys of every live integration (integrationID "") or of one. A failure
// is logged and leaves the set as it was: keys are still learnt as lookups find them.
func (s *Cache) learn(ctx context.Context, integrationID string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	keys, err := s.loadKeys(ctx, integrationID)
	if err != nil {
		s.log.WarnContext(ctx, "reading the integrations' keys failed", "integrationId", integrationID, "error", err)
		return
	}
	for _, k := range keys {
		s.remember(keyPublic + k.publicKey)
		s.remember(keySecret + string(k.secretHash))
	}
}

// loadKeyRows reads the keys of the live integrations (integrationID "") or of one.
func (s *Cache) loadKeyRows(ctx context.Context, integrationID string) ([]integrationKeys, error) {
	rows, err := s.pool.Query(ctx, `SELECT public_key, secret_hash FROM integrations
		WHERE revoked_at IS NULL AND ($1 = '' OR id = $1) ORDER BY created_at DESC LIMIT $2`, integrationID, maxKnownKeys/4)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (integrationKeys, error) {
		var k integrationKeys
		err := row.Scan(&k.publicKey, &k.secretHash)
		return k, err
	})
}

type knownOnlyKey struct{}

// KnownKeysOnly marks ctx so that a key lookup under it reaches the database only for a key
// this Cache knows to exist (see above), whatever flushes came since; any other key answers as
// unknown (401). The gateway uses it for an address out of misses.
func KnownKeysOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, knownOnlyKey{}, true)
}

func knownOnly(ctx context.Context) bool {
	v, _ := ctx.Value(knownOnlyKey{}).(bool)
	return v
}

// remember notes that a lookup of key found an integration.
func (s *Cache) remember(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.known[key]; ok {
		return
	}
	if s.known == nil || len(s.known) >= maxKnownKeys {
		s.known = map[string]struct{}{}
	}
	s.known[key] = struct{}{}
}

// isKnown reports whether a lookup of key has found an integration before.
func (s *Cache) isKnown(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.known[key]
	return ok
}
