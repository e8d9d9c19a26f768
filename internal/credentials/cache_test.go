package credentials

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func testCache(load func(context.Context, string, any) (*Integration, error)) *Cache {
	s := NewCache(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.live.Store(true)
	s.load = load
	return s
}

// cachedPublic reports whether publicKey's entry is cached.
func (s *Cache) cachedPublic(publicKey string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.entries.byKey[keyPublic+publicKey]
	return ok
}

// fakeKey is a well-formed public key made of c.
func fakeKey(prefix string, c byte) string {
	return prefix + strings.Repeat(string(c), keyTokenLen-1) + "A"
}

// TestCachedKeyOwnsItsBytes guards against caching a caller's string by reference: Fiber hands
// out header values that alias a buffer fasthttp reuses for the next request, and a map key whose
// bytes change under it corrupts the map.
func TestCachedKeyOwnsItsBytes(t *testing.T) {
	s := testCache(func(_ context.Context, _ string, arg any) (*Integration, error) {
		return &Integration{ID: "id-of-" + arg.(string), PublicKey: arg.(string)}, nil
	})
	a, b := fakeKey(PublicKeyPrefix, 'a'), fakeKey(PublicKeyPrefix, 'b')
	buf := []byte(a)
	header := unsafe.String(&buf[0], len(buf)) // what c.Get returns
	got, err := s.ByPublicKey(context.Background(), header)
	require.NoError(t, err)
	require.Equal(t, "id-of-"+a, got.ID)

	copy(buf, b) // the next request reuses the buffer
	require.True(t, s.cachedPublic(a), "the cache key must keep the bytes it was stored with")
	loads := s.Loads()
	got, err = s.ByPublicKey(context.Background(), a)
	require.NoError(t, err)
	require.Equal(t, "id-of-"+a, got.ID)
	require.Equal(t, loads, s.Loads(), "served from the cache")
}

func TestFlushDropsEntriesAndStaleLoadsAreNotCached(t *testing.T) {
	var s *Cache
	s = testCache(func(_ context.Context, _ string, arg any) (*Integration, error) {
		s.Flush() // a change lands while this load is in flight
		return &Integration{ID: "stale"}, nil
	})
	k := fakeKey(PublicKeyPrefix, 'x')
	_, err := s.ByPublicKey(context.Background(), k)
	require.NoError(t, err)
	require.False(t, s.cachedPublic(k), "a load that raced a flush must not be cached")
}

// TestMissesAndMalformedKeysAreNeverCached is the unauthenticated memory exhaustion of issue 12:
// a malformed key is refused before any lookup, and a well-formed unknown key is looked up but
// leaves nothing behind.
func TestMissesAndMalformedKeysAreNeverCached(t *testing.T) {
	s := testCache(func(context.Context, string, any) (*Integration, error) { return nil, nil })
	ctx := context.Background()
	for _, k := range []string{"", "mpk_", strings.Repeat("x", 15000), PublicKeyPrefix + strings.Repeat("a", 15000),
		PublicKeyPrefix + strings.Repeat("!", keyTokenLen)} {
		in, err := s.ByPublicKey(ctx, k)
		require.NoError(t, err)
		require.Nil(t, in)
		in, err = s.BySecret(ctx, strings.Replace(k, PublicKeyPrefix, SecretKeyPrefix, 1))
		require.NoError(t, err)
		require.Nil(t, in)
	}
	require.Zero(t, s.Loads(), "malformed keys are never looked up")
	for i := 0; i < 1000; i++ {
		in, err := s.ByPublicKey(ctx, PublicKeyPrefix+randomToken(keyRandomBytes))
		require.NoError(t, err)
		require.Nil(t, in)
	}
	require.EqualValues(t, 1000, s.Loads(), "well-formed keys are looked up")
	require.Zero(t, s.Len(), "misses are not cached")
	require.Zero(t, s.Bytes())
}

// TestFullCacheEvictsAndKeepsCaching: the cache is bounded by bytes, and when full it evicts
// the least recently used entries instead of refusing new ones, so keys in use stay cached.
func TestFullCacheEvictsAndKeepsCaching(t *testing.T) {
	s := testCache(func(_ context.Context, _ string, arg any) (*Integration, error) {
		return &Integration{ID: "i", PublicKey: arg.(string), Capabilities: []string{"viewer"}}, nil
	})
	const budget = 16 << 10
	s.SetMaxBytes(budget)
	ctx := context.Background()
	hot := PublicKeyPrefix + randomToken(keyRandomBytes)
	for i := 0; i < 5000; i++ {
		_, err := s.ByPublicKey(ctx, PublicKeyPrefix+randomToken(keyRandomBytes))
		require.NoError(t, err)
		_, err = s.ByPublicKey(ctx, hot)
		require.NoError(t, err)
		require.LessOrEqual(t, s.Bytes(), int64(budget))
	}
	require.Greater(t, s.Len(), 10, "the budget holds many entries")
	require.True(t, s.cachedPublic(hot), "the key in use is never the one evicted")
	loads := s.Loads()
	fresh := PublicKeyPrefix + randomToken(keyRandomBytes)
	_, err := s.ByPublicKey(ctx, fresh)
	require.NoError(t, err)
	require.True(t, s.cachedPublic(fresh), "a full cache still caches new keys")
	_, err = s.ByPublicKey(ctx, fresh)
	require.NoError(t, err)
	require.Equal(t, loads+1, s.Loads())
}

func TestCustomerStatusIsCachedAndDroppedAlone(t *testing.T) {
	s := testCache(func(_ context.Context, _ string, arg any) (*Integration, error) {
		return &Integration{ID: "i", PublicKey: arg.(string)}, nil
	})
	status := map[string]bool{"c1": true, "c2": true}
	s.loadCustomer = func(_ context.Context, _ string, eu string) (bool, bool, error) {
		active, found := status[eu]
		return active, found, nil
	}
	ctx := context.Background()
	pk := fakeKey(PublicKeyPrefix, 'k')
	_, err := s.ByPublicKey(ctx, pk)
	require.NoError(t, err)
	for _, eu := range []string{"c1", "c2", "ghost"} {
		_, err := s.CustomerActive(ctx, "i", eu)
		require.NoError(t, err)
	}
	require.Equal(t, 3, s.Len(), "the integration and the two customers that exist")
	status["c1"] = false
	active, err := s.CustomerActive(ctx, "i", "c1")
	require.NoError(t, err)
	require.True(t, active, "cached until told")
	s.notified(customerNoticePrefix + "i:c1")
	active, err = s.CustomerActive(ctx, "i", "c1")
	require.NoError(t, err)
	require.False(t, active)
	require.True(t, s.cachedPublic(pk), "a customer's notice drops that customer only")
	s.notified("some-integration-id")
	require.Zero(t, s.Len(), "an integration's notice flushes")
}

// TestKnownKeysOnly: under KnownKeysOnly an unknown key costs no lookup, while a key a lookup
// found before is served, from the cache or, after a flush, from the database again.
func TestKnownKeysOnly(t *testing.T) {
	real := fakeKey(PublicKeyPrefix, 'r')
	s := testCache(func(_ context.Context, _ string, arg any) (*Integration, error) {
		if arg.(string) == real {
			return &Integration{ID: "real", PublicKey: real}, nil
		}
		return nil, nil
	})
	only := KnownKeysOnly(context.Background())
	// Never seen: taken as unknown without a lookup, even a key that exists.
	got, err := s.ByPublicKey(only, real)
	require.NoError(t, err)
	require.Nil(t, got)
	require.Zero(t, s.Loads())

	// Found once by an ordinary lookup, then known, across a flush.
	got, err = s.ByPublicKey(context.Background(), real)
	require.NoError(t, err)
	require.Equal(t, "real", got.ID)
	s.Flush()
	loads := s.Loads()
	got, err = s.ByPublicKey(only, real)
	require.NoError(t, err)
	require.Equal(t, "real", got.ID)
	require.Equal(t, loads+1, s.Loads(), "after a flush a known key is looked up again")

	// Strangers' keys: a lookup each without the mark, none with it.
	loads = s.Loads()
	for c := byte('A'); c < 'A'+20; c++ {
		got, err := s.ByPublicKey(only, fakeKey(PublicKeyPrefix, c))
		require.NoError(t, err)
		require.Nil(t, got)
	}
	require.Equal(t, loads, s.Loads(), "unknown keys under KnownKeysOnly cost no lookup")
	_, _ = s.ByPublicKey(context.Background(), fakeKey(PublicKeyPrefix, 'z'))
	require.Equal(t, loads+1, s.Loads())
	got, _ = s.ByPublicKey(only, fakeKey(PublicKeyPrefix, 'z'))
	require.Nil(t, got, "a key a lookup did not find is not remembered")
	require.Equal(t, loads+1, s.Loads())
}

// TestLearnMakesKeysKnown: the keys read at connect, or on an integration's notification, are
// known before any lookup found them, and survive flushes; a failed read changes nothing.
func TestLearnMakesKeysKnown(t *testing.T) {
	fresh := fakeKey(PublicKeyPrefix, 'f')
	secret := fakeKey(SecretKeyPrefix, 's')
	s := testCache(func(_ context.Context, _ string, arg any) (*Integration, error) {
		if arg == fresh {
			return &Integration{ID: "fresh", PublicKey: fresh}, nil
		}
		if h, ok := arg.([]byte); ok && string(h) == string(HashSecret(secret)) {
			return &Integration{ID: "fresh", PublicKey: fresh}, nil
		}
		return nil, nil
	})
	var fail bool
	s.loadKeys = func(_ context.Context, id string) ([]integrationKeys, error) {
		if fail {
			return nil, context.DeadlineExceeded
		}
		require.Contains(t, []string{"", "fresh"}, id)
		return []integrationKeys{{publicKey: fresh, secretHash: HashSecret(secret)}}, nil
	}
	only := KnownKeysOnly(context.Background())
	got, _ := s.ByPublicKey(only, fresh)
	require.Nil(t, got, "not known yet")

	fail = true
	s.learn(context.Background(), "")
	got, _ = s.ByPublicKey(only, fresh)
	require.Nil(t, got, "a failed read changes nothing")

	fail = false
	s.learn(context.Background(), "fresh")
	s.Flush()
	got, err := s.ByPublicKey(only, fresh)
	require.NoError(t, err)
	require.Equal(t, "fresh", got.ID)
	got, err = s.BySecret(only, secret)
	require.NoError(t, err)
	require.Equal(t, "fresh", got.ID)
}
