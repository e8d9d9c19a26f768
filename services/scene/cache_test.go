package scene

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
)

func liveCache() *sceneCache {
	c := newSceneCache(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.live.Store(true)
	return c
}

func loadRow(integ string) func(context.Context, string) (*ent.Scene, error) {
	return func(_ context.Context, id string) (*ent.Scene, error) {
		return &ent.Scene{ID: id, IntegrationID: integ, Title: "t"}, nil
	}
}

func (c *sceneCache) cachedScene(id string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.scenes[id]
	return ok
}

func (c *sceneCache) cachedPage(integ, key string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.lists[integ][key]
	return ok
}

func TestSceneCacheServesFromMemoryUntilInvalidated(t *testing.T) {
	c := liveCache()
	ctx := context.Background()
	for range 3 {
		sc, err := c.scene(ctx, "s1", loadRow("i1"))
		require.NoError(t, err)
		require.Equal(t, "s1", sc.ID)
	}
	require.EqualValues(t, 1, c.loads.Load(), "one load, then memory")
	pageLoads := 0
	loadPage := func(context.Context) (*scenePage, error) {
		pageLoads++
		return &scenePage{rows: []*ent.Scene{{ID: "s1"}}}, nil
	}
	for range 3 {
		_, err := c.page(ctx, "i1", "k", loadPage)
		require.NoError(t, err)
		_, err = c.page(ctx, "i2", "k", loadPage)
		require.NoError(t, err)
	}
	require.Equal(t, 2, pageLoads)

	// A change of s1 (integration i1) drops s1 and every page of i1, not i2's.
	c.notified("i1:s1")
	require.False(t, c.cachedScene("s1"))
	require.False(t, c.cachedPage("i1", "k"))
	require.True(t, c.cachedPage("i2", "k"))
	_, err := c.scene(ctx, "s1", loadRow("i1"))
	require.NoError(t, err)
	require.EqualValues(t, 1+2+1, c.loads.Load(), "s1 loaded again")

	// A change of another scene of i1 still drops i1's pages (any of them may list it) but not s1.
	_, err = c.page(ctx, "i1", "k", loadPage)
	require.NoError(t, err)
	c.notified("i1:s2")
	require.True(t, c.cachedScene("s1"))
	require.False(t, c.cachedPage("i1", "k"))

	// A payload that names nothing flushes everything.
	c.notified("garbage")
	require.False(t, c.cachedScene("s1"))
	require.False(t, c.cachedPage("i2", "k"))
	require.Zero(t, c.listCost)
}

func TestSceneCacheDoesNotStoreALoadThatRacedAnInvalidation(t *testing.T) {
	c := liveCache()
	ctx := context.Background()
	sc, err := c.scene(ctx, "s1", func(_ context.Context, id string) (*ent.Scene, error) {
		c.invalidate("i1", "s1") // the scene changes (here or in another process) while this load is in flight
		return &ent.Scene{ID: id, Title: "stale"}, nil
	})
	require.NoError(t, err)
	require.Equal(t, "stale", sc.Title, "the caller still gets its answer")
	require.False(t, c.cachedScene("s1"), "a load that raced an invalidation must not be cached")

	_, err = c.page(ctx, "i1", "k", func(context.Context) (*scenePage, error) {
		c.notified("i1:s9")
		return &scenePage{}, nil
	})
	require.NoError(t, err)
	require.False(t, c.cachedPage("i1", "k"), "a page load that raced an invalidation must not be cached")

	_, err = c.scene(ctx, "s1", func(_ context.Context, id string) (*ent.Scene, error) {
		c.flush() // a reconnect of the listener
		return &ent.Scene{ID: id}, nil
	})
	require.NoError(t, err)
	require.False(t, c.cachedScene("s1"))

	// Without interference the next load is cached.
	_, err = c.scene(ctx, "s1", loadRow("i1"))
	require.NoError(t, err)
	require.True(t, c.cachedScene("s1"))
}

func TestSceneCacheBypassedWhileNotListening(t *testing.T) {
	c := newSceneCache(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	for range 3 {
		_, err := c.scene(ctx, "s1", loadRow("i1"))
		require.NoError(t, err)
		_, err = c.page(ctx, "i1", "k", func(context.Context) (*scenePage, error) { return &scenePage{}, nil })
		require.NoError(t, err)
	}
	require.EqualValues(t, 6, c.loads.Load(), "every read goes to the database")
	require.False(t, c.cachedScene("s1"))
	require.False(t, c.cachedPage("i1", "k"))
}

func TestSceneCacheKeepsNoMissesOrErrors(t *testing.T) {
	c := liveCache()
	ctx := context.Background()
	sc, err := c.scene(ctx, "nope", func(context.Context, string) (*ent.Scene, error) { return nil, nil })
	require.NoError(t, err)
	require.Nil(t, sc)
	require.False(t, c.cachedScene("nope"))
	_, err = c.scene(ctx, "s1", func(context.Context, string) (*ent.Scene, error) { return nil, errors.New("down") })
	require.Error(t, err)
	require.False(t, c.cachedScene("s1"))
	_, err = c.page(ctx, "i1", "k", func(context.Context) (*scenePage, error) { return nil, errors.New("down") })
	require.Error(t, err)
	require.False(t, c.cachedPage("i1", "k"))
}

// TestSceneCacheKeysOwnTheirBytes guards against keeping a Fiber string as a map key: path
// parameters and headers alias a buffer fasthttp reuses for the next request.
func TestSceneCacheKeysOwnTheirBytes(t *testing.T) {
	c := liveCache()
	ctx := context.Background()
	buf := []byte("aaaaaaaaaaaaaaaaaaaaaaaa")
	id := unsafe.String(&buf[0], len(buf)) // what c.Params returns
	_, err := c.scene(ctx, id, loadRow("i1"))
	require.NoError(t, err)
	ibuf, kbuf := []byte("integration-a"), []byte("20|createdAt|desc|-|eu:alice")
	integ, key := unsafe.String(&ibuf[0], len(ibuf)), unsafe.String(&kbuf[0], len(kbuf))
	_, err = c.page(ctx, integ, key, func(context.Context) (*scenePage, error) { return &scenePage{}, nil })
	require.NoError(t, err)

	copy(buf, "bbbbbbbbbbbbbbbbbbbbbbbb") // the next request reuses the buffers
	copy(ibuf, "integration-b")
	copy(kbuf, "20|createdAt|desc|-|eu:bobby")
	require.True(t, c.cachedScene("aaaaaaaaaaaaaaaaaaaaaaaa"), "the scene key keeps the bytes it was stored with")
	require.False(t, c.cachedScene("bbbbbbbbbbbbbbbbbbbbbbbb"))
	require.True(t, c.cachedPage("integration-a", "20|createdAt|desc|-|eu:alice"))
	require.False(t, c.cachedPage("integration-b", "20|createdAt|desc|-|eu:bobby"))
}

func TestSceneCacheIsBounded(t *testing.T) {
	c := liveCache()
	row := sceneBytes(&ent.Scene{ID: "A", IntegrationID: "i1", Title: "t"}) + 1
	c.maxSceneBytes, c.maxListBytes = 10*row, 30*sceneBytes(nil)+3*entryOverhead+20
	ctx := context.Background()
	for i := range 50 {
		_, err := c.scene(ctx, string(rune('A'+i)), loadRow("i1"))
		require.NoError(t, err)
	}
	require.Len(t, c.scenes, 10)
	require.Equal(t, 10*row, c.sceneCost)
	page := func(n int) func(context.Context) (*scenePage, error) {
		return func(context.Context) (*scenePage, error) { return &scenePage{rows: make([]*ent.Scene, n)}, nil }
	}
	for i := range 20 {
		_, err := c.page(ctx, []string{"i1", "i2", "i3"}[i%3], string(rune('a'+i)), page(4))
		require.NoError(t, err)
	}
	require.LessOrEqual(t, c.listCost, c.maxListBytes)
	var total int64
	for _, pages := range c.lists {
		require.NotEmpty(t, pages, "no empty integration maps are left behind")
		for _, p := range pages {
			total += p.cost()
		}
	}
	require.Equal(t, c.listCost, total)
	// Two requests that load the same page both store it: the second replaces the first
	// without counting it twice.
	c.flush()
	_, err := c.page(ctx, "i1", "k", func(ctx context.Context) (*scenePage, error) {
		_, err := c.page(ctx, "i1", "k", page(2)) // the other request, done meanwhile
		require.NoError(t, err)
		return &scenePage{rows: make([]*ent.Scene, 2)}, nil
	})
	require.NoError(t, err)
	require.Equal(t, entryOverhead+2*sceneBytes(nil)+1, c.listCost)
	// A page larger than the whole budget is served but not cached.
	_, err = c.page(ctx, "i1", "huge", page(100))
	require.NoError(t, err)
	require.False(t, c.cachedPage("i1", "huge"))
}

// TestSceneCacheIsBoundedByBytes: the scene cache holds rows up to a byte budget, whatever they
// carry: a few rows with big levelData take the room of many small ones (a bound by count let
// 20 000 rows of 256 KiB levelData each take 5 GiB), a row bigger than the budget is served but
// not kept, and an invalidation gives its bytes back.
func TestSceneCacheIsBoundedByBytes(t *testing.T) {
	c := liveCache()
	c.maxSceneBytes = 1 << 20
	ctx := context.Background()
	big := func(kib int) func(context.Context, string) (*ent.Scene, error) {
		return func(_ context.Context, id string) (*ent.Scene, error) {
			notes := make([]any, kib)
			for i := range notes {
				notes[i] = strings.Repeat("x", 1024)
			}
			return &ent.Scene{ID: id, IntegrationID: "i1", Title: "t", LevelData: map[string]any{"notes": notes}}, nil
		}
	}
	// The levelData is counted.
	require.Greater(t, sceneBytes(&ent.Scene{LevelData: map[string]any{"notes": []any{strings.Repeat("x", 256<<10)}}}), int64(256<<10))
	for i := range 40 {
		_, err := c.scene(ctx, fmt.Sprintf("big%02d", i), big(200))
		require.NoError(t, err)
		require.LessOrEqual(t, c.sceneCost, c.maxSceneBytes)
	}
	require.LessOrEqual(t, len(c.scenes), 5, "200 KiB rows: at most five fit in 1 MiB")
	require.NotEmpty(t, c.scenes)
	var total int64
	for _, e := range c.scenes {
		total += e.cost
	}
	require.Equal(t, total, c.sceneCost)

	// Larger than the whole budget: served, not kept, nothing evicted for it.
	before := len(c.scenes)
	sc, err := c.scene(ctx, "huge", big(2048))
	require.NoError(t, err)
	require.Equal(t, "huge", sc.ID)
	require.False(t, c.cachedScene("huge"))
	require.Len(t, c.scenes, before)

	// Invalidations and a flush give the bytes back.
	for id := range c.scenes {
		c.invalidate("i1", id)
	}
	require.Zero(t, c.sceneCost)
	_, err = c.scene(ctx, "small", loadRow("i1"))
	require.NoError(t, err)
	c.flush()
	require.Zero(t, c.sceneCost)
	require.Empty(t, c.scenes)
}

func TestPageKeyNormalizesTheQuery(t *testing.T) {
	key := func(eu *string, kv ...string) string {
		p, err := parseListParams(query(kv...))
		require.NoError(t, err)
		if eu == nil {
			return pageKey(p, false, "")
		}
		return pageKey(p, true, *eu)
	}
	alice, empty := "alice", ""
	require.Equal(t, key(nil), key(nil, "limit", "20", "sort", "createdAt", "dir", "desc", "cursor", "", "x", "y"))
	require.NotEqual(t, key(nil), key(&alice))
	require.NotEqual(t, key(&empty), key(nil), "no EU header is not an empty one")
	require.NotEqual(t, key(nil), key(nil, "dir", "asc"))
	require.NotEqual(t, key(nil), key(nil, "featured", "true"))
	require.NotEqual(t, key(nil, "featured", "false"), key(nil, "featured", "true"))
	require.NotEqual(t, key(nil), key(nil, "limit", "21"))
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	cur := encodeCursor(&ent.Scene{ID: "0123456789abcdef01234567", CreatedAt: at}, sortCreatedAt)
	later := encodeCursor(&ent.Scene{ID: "0123456789abcdef01234567", CreatedAt: at.Add(time.Microsecond)}, sortCreatedAt)
	require.NotEqual(t, key(nil), key(nil, "cursor", cur))
	require.NotEqual(t, key(nil, "cursor", later), key(nil, "cursor", cur))
	require.Equal(t, key(nil, "cursor", cur), key(nil, "cursor", cur, "limit", "20"))
}
