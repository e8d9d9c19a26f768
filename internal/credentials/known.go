package credentials

import "context"

// Known keys: the gateway's answer to an address that has used up its failure allowance
// (docs/security.md, "Rate limits"). Such an address is refused everything that does not
// authenticate, and checking a key it sends must cost no database lookup, or refusing it would
// cost what the allowance saves; yet an integrator behind the same address (a cloud NAT's egress)
// must still be served. A key's lookup is free when the key is cached; the cache is flushed on
// every change to any integration, so the Cache also remembers, across flushes, which keys a
// lookup found: those may be looked up again, and any other key is taken as unknown.

// maxKnownKeys bounds the remembered keys (two an integration: public key and secret hash),
// about 100 bytes each. Past it the set starts again empty: keys are then looked up again as
// they are used.
const maxKnownKeys = 100_000

type knownOnlyKey struct{}

// KnownKeysOnly marks ctx so that a key lookup under it reaches the database only for a key a
// lookup of this Cache has found before (in this process, whatever flushes came since); any
// other key answers as unknown (401). The gateway uses it for an address out of misses.
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
