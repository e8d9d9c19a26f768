package user

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestCachedKeyOwnsItsBytes guards against caching a caller's string by reference: Fiber hands
// out header values that alias a buffer fasthttp reuses for the next request, and a map key whose
// bytes change under it corrupts the map.
func TestCachedKeyOwnsItsBytes(t *testing.T) {
	s := NewIntegrations(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.live.Store(true)
	s.load = func(_ context.Context, _ string, arg any) (*Integration, error) {
		return &Integration{ID: "id-of-" + arg.(string), PublicKey: arg.(string)}, nil
	}
	buf := []byte("mpk_AAAAAAAA")
	header := unsafe.String(&buf[0], len(buf)) // what c.Get returns
	got, err := s.ByPublicKey(context.Background(), header)
	require.NoError(t, err)
	require.Equal(t, "id-of-mpk_AAAAAAAA", got.ID)

	copy(buf, "mpk_BBBBBBBB") // the next request reuses the buffer
	s.mu.RLock()
	_, ok := s.byPublic["mpk_AAAAAAAA"]
	s.mu.RUnlock()
	require.True(t, ok, "the cache key must keep the bytes it was stored with")
	loads := s.Loads()
	got, err = s.ByPublicKey(context.Background(), "mpk_AAAAAAAA")
	require.NoError(t, err)
	require.Equal(t, "id-of-mpk_AAAAAAAA", got.ID)
	require.Equal(t, loads, s.Loads(), "served from the cache")
}

func TestFlushDropsEntriesAndStaleLoadsAreNotCached(t *testing.T) {
	s := NewIntegrations(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.live.Store(true)
	s.load = func(_ context.Context, _ string, arg any) (*Integration, error) {
		s.Flush() // a change lands while this load is in flight
		return &Integration{ID: "stale"}, nil
	}
	_, err := s.ByPublicKey(context.Background(), "mpk_X")
	require.NoError(t, err)
	s.mu.RLock()
	_, cached := s.byPublic["mpk_X"]
	s.mu.RUnlock()
	require.False(t, cached, "a load that raced a flush must not be cached")
}
