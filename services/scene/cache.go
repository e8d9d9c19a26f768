package scene

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/pgnotify"
)

// Cache bounds, in bytes of the cached rows as sceneBytes estimates them. A scene row is small
// but for its levelData (up to 256 KiB), so a bound by count would let a few thousand rows with
// big levelData take gigabytes; a bound by bytes holds whatever the rows carry. List pages hold
// rows without levelData (scenes.ItemColumns).
const (
	maxCachedSceneBytes = 64 << 20
	maxCachedListBytes  = 32 << 20
)

// scenePage is one list page as the database returned it: the rows (with their owners'
// external user ids) and the cursor after them. It depends only on the integration, the
// normalized query and the EU filter; what depends on the caller (isOwner, productSlug) is
// rendered per request.
type scenePage struct {
	rows []*ent.Scene
	next *string
	// size is the page's cost, measured once before the page is cached (it never changes).
	size int64
}

// cost is what a page counts against the list budget: its rows' bytes plus a fixed overhead,
// so an empty page still costs something.
func (p *scenePage) cost() int64 { return p.size }

// measure sets the page's size from its rows.
func (p *scenePage) measure() {
	n := int64(entryOverhead)
	if p.next != nil {
		n += int64(len(*p.next))
	}
	for _, sc := range p.rows {
		n += sceneBytes(sc)
	}
	p.size = n
}

// entryOverhead is a rough per-entry cost of the map slot, key and headers, so that entries with
// little data are not free.
const entryOverhead = 256

// sceneBytes estimates the memory a cached scene row holds: a fixed part for the struct and its
// owner edge, plus every string, slice and the levelData tree it points to. It errs high rather
// than low; the point is that a row's cost grows with what it carries.
func sceneBytes(sc *ent.Scene) int64 {
	if sc == nil {
		return 8
	}
	n := int64(unsafe.Sizeof(*sc)) + entryOverhead
	n += int64(len(sc.ID) + len(sc.IntegrationID) + len(sc.OwnerID) + len(sc.Title) + len(sc.Description) +
		len(sc.ImageURL) + len(sc.SplatURL) + len(sc.SplatType) + len(sc.Visibility))
	for _, p := range []*string{sc.ThumbnailDepthURL, sc.LodFolderKey, sc.ClonedFromID} {
		if p != nil {
			n += int64(len(*p)) + 16
		}
	}
	for _, k := range sc.AssetKeys {
		n += int64(len(k)) + 16
	}
	n += int64(8 * (len(sc.InitialCameraPosition) + len(sc.InitialCameraRotation)))
	if sc.RemixedFrom != nil {
		n += 256
	}
	if sc.LevelData != nil {
		n += jsonBytes(sc.LevelData)
	}
	if o := sc.Edges.Owner; o != nil {
		n += int64(unsafe.Sizeof(*o)) + int64(len(o.ExternalUserID))
	}
	return n
}

// jsonBytes estimates the memory of a decoded JSON value: the interface and map/slice headers
// plus the strings, walked iteratively so no nesting depth matters.
func jsonBytes(v any) int64 {
	var n int64
	stack := []any{v}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n += 16 // the interface value
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case map[string]any:
			n += 48
			for k, e := range x {
				n += int64(len(k)) + 32
				stack = append(stack, e)
			}
		case []any:
			n += 24
			stack = append(stack, x...)
		default:
			n += 8
		}
	}
	return n
}

// sceneEntry is a cached scene row and its cost.
type sceneEntry struct {
	sc   *ent.Scene
	cost int64
}

// sceneCache holds scene rows (GET /api/v1/splats/{id}) and list pages (GET /api/v1/splats) in
// memory. Entries live until a NOTIFY on pgnotify.ScenesChannel names their scene or their integration:
// a change drops the scene's entry and every list page of its integration, which keeps list
// caching correct without tracking which page holds which scene (and cheap to reason about when
// view counts start changing often). While the LISTEN connection is down the cache is bypassed,
// because a missed notification would serve a changed or deleted scene. A hit is served only
// after the barrier's round trip (db.Barrier), so a change another process committed before the
// read is never missed because its notification was still on its way.
//
// Cached rows are shared by every caller and never modified: scoping (integration, archived,
// visibility for an EU) and everything caller-dependent is decided per request.
type sceneCache struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu     sync.RWMutex
	scenes map[string]sceneEntry // by scene id
	// sceneCost is the sum of the cached scenes' cost.
	sceneCost int64
	// lists holds list pages by integration id, then by pageKey.
	lists    map[string]map[string]*scenePage
	listCost int64  // sum of the cached pages' cost
	gen      uint64 // bumped on every invalidation and flush; loads that raced one are not cached
	live     atomic.Bool
	backend  atomic.Uint32 // backend pid of the LISTEN connection, for tests and diagnostics
	// barrier makes a hit wait until the changes committed before the read have been applied
	// (read-your-writes across processes); nil in the unit tests, which have no database.
	barrier *db.Barrier
	loads   atomic.Int64 // database reads through the cache, for tests and metrics
	notices atomic.Int64 // notifications applied, so a test can wait for one

	// maxSceneBytes and maxListBytes bound sceneCost and listCost.
	maxSceneBytes, maxListBytes int64
}

func newSceneCache(pool *pgxpool.Pool, log *slog.Logger) *sceneCache {
	c := &sceneCache{pool: pool, log: log, scenes: map[string]sceneEntry{}, lists: map[string]map[string]*scenePage{},
		maxSceneBytes: maxCachedSceneBytes, maxListBytes: maxCachedListBytes}
	if pool != nil {
		c.barrier = db.NewBarrier(pool)
	}
	return c
}

// current says whether a hit may be served: once every change committed before the read has
// been applied (a client that saw another process's 2xx for a change must not read the old
// row here). False when that cannot be known in time: the caller reads the database.
func (c *sceneCache) current(ctx context.Context) bool {
	return c.barrier == nil || c.barrier.Wait(ctx) == nil
}

// scene returns the scene with id, from memory when possible; nil when there is none. Rows
// that do not exist are not cached (ids are random, so such lookups are rare and would only
// push real entries out).
func (c *sceneCache) scene(ctx context.Context, id string, load func(context.Context, string) (*ent.Scene, error)) (*ent.Scene, error) {
	if !c.live.Load() {
		c.loads.Add(1)
		return load(ctx, id)
	}
	c.mu.RLock()
	_, ok := c.scenes[id]
	c.mu.RUnlock()
	if ok && !c.current(ctx) {
		c.loads.Add(1)
		return load(ctx, id)
	}
	c.mu.RLock()
	e, ok := c.scenes[id] // again: the wait may have applied a change that dropped it
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		return e.sc, nil
	}
	c.loads.Add(1)
	sc, err := load(ctx, id)
	if err != nil || sc == nil {
		return sc, err
	}
	cost := sceneBytes(sc) + int64(len(id))
	if cost > c.maxSceneBytes {
		return sc, nil
	}
	// A path parameter from Fiber aliases a buffer fasthttp reuses for the next request; a map
	// key must own its bytes or the map silently corrupts.
	key := strings.Clone(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return sc, nil // an invalidation landed while loading: the row may already be stale
	}
	if old, ok := c.scenes[key]; ok {
		c.sceneCost -= old.cost
		delete(c.scenes, key)
	}
	for c.sceneCost+cost > c.maxSceneBytes {
		for k, old := range c.scenes { // map order is random: a random eviction
			delete(c.scenes, k)
			c.sceneCost -= old.cost
			break
		}
	}
	c.scenes[key] = sceneEntry{sc: sc, cost: cost}
	c.sceneCost += cost
	return sc, nil
}

// page returns a list page of integrationID, from memory when possible.
func (c *sceneCache) page(ctx context.Context, integrationID, key string, load func(context.Context) (*scenePage, error)) (*scenePage, error) {
	if !c.live.Load() {
		c.loads.Add(1)
		return load(ctx)
	}
	c.mu.RLock()
	_, ok := c.lists[integrationID][key]
	c.mu.RUnlock()
	if ok && !c.current(ctx) {
		c.loads.Add(1)
		return load(ctx)
	}
	c.mu.RLock()
	p, ok := c.lists[integrationID][key] // again: the wait may have applied a change that dropped it
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		return p, nil
	}
	c.loads.Add(1)
	p, err := load(ctx)
	if err != nil {
		return nil, err
	}
	p.measure()
	p.size += int64(len(key))
	if p.cost() > c.maxListBytes {
		return p, nil
	}
	integ, key := strings.Clone(integrationID), strings.Clone(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return p, nil // an invalidation landed while loading: the page may already be stale
	}
	if old, ok := c.lists[integ][key]; ok {
		c.listCost -= old.cost()
		delete(c.lists[integ], key)
	}
	for c.listCost+p.cost() > c.maxListBytes && c.evictPage() {
	}
	pages := c.lists[integ]
	if pages == nil {
		pages = map[string]*scenePage{}
		c.lists[integ] = pages
	}
	pages[key] = p
	c.listCost += p.cost()
	return p, nil
}

// evictPage drops one cached page, chosen at random; false when there is none. c.mu is held.
func (c *sceneCache) evictPage() bool {
	for integ, pages := range c.lists {
		for k, p := range pages {
			delete(pages, k)
			c.listCost -= p.cost()
			break
		}
		if len(pages) == 0 {
			delete(c.lists, integ)
		}
		return true
	}
	return false
}

// invalidate drops the scene's entry and every list page of its integration.
func (c *sceneCache) invalidate(integrationID, sceneID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.scenes[sceneID]; ok {
		c.sceneCost -= e.cost
		delete(c.scenes, sceneID)
	}
	for _, p := range c.lists[integrationID] {
		c.listCost -= p.cost()
	}
	delete(c.lists, integrationID)
	c.gen++
}

// flush drops every entry.
func (c *sceneCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scenes = map[string]sceneEntry{}
	c.sceneCost = 0
	c.lists = map[string]map[string]*scenePage{}
	c.listCost = 0
	c.gen++
}

// notified applies one notification payload; anything but "<integrationId>:<sceneId>" flushes
// everything, since it cannot say what changed.
func (c *sceneCache) notified(payload string) {
	defer c.notices.Add(1)
	integ, id, ok := strings.Cut(payload, ":")
	if !ok || integ == "" || id == "" {
		c.log.Warn("scene cache: unexpected notification payload; flushing", "payload", payload)
		c.flush()
		return
	}
	c.invalidate(integ, id)
}

// listen keeps the cache's LISTEN connection until ctx ends: every notification drops what it
// names, every (re)connect flushes everything.
func (c *sceneCache) listen(ctx context.Context) {
	db.Listen(ctx, c.pool, db.Listener{Channel: pgnotify.ScenesChannel, OnConnect: c.flush, OnNotify: c.notified, Live: &c.live,
		Log: c.log, Barrier: c.barrier, Backend: &c.backend})
}

// pageKey is the cache key of a list page within its integration: the EU filter and the
// normalized query (defaults applied, the cursor decoded), so equivalent queries share a page.
func pageKey(p *listParams, hasEU bool, eu string) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(p.limit))
	b.WriteString("|" + p.sort)
	if p.desc {
		b.WriteString("|desc")
	} else {
		b.WriteString("|asc")
	}
	switch {
	case p.featured == nil:
		b.WriteString("|-")
	case *p.featured:
		b.WriteString("|featured")
	default:
		b.WriteString("|unfeatured")
	}
	if p.after != nil {
		b.WriteString("|after:")
		if p.sort == sortViewCount {
			b.WriteString(strconv.FormatInt(p.after.count, 10))
		} else {
			b.WriteString(p.after.at.UTC().Format(time.RFC3339Nano))
		}
		b.WriteString("," + p.after.ID)
	}
	// The EU goes last: it is the only part a client chooses freely.
	if hasEU {
		b.WriteString("|eu:" + eu)
	} else {
		b.WriteString("|all")
	}
	return b.String()
}

// Listen keeps the scene cache's LISTEN connection open until ctx ends; until it runs (and
// whenever its connection is down) every read goes to the database. Start it once per process.
func (s *Service) Listen(ctx context.Context) { s.cache.listen(ctx) }

// CacheLive reports whether the scene cache is in use (its LISTEN connection is up).
func (s *Service) CacheLive() bool { return s.cache.live.Load() }

// CacheListenerBackend is the Postgres backend pid of the cache's LISTEN connection (0 while
// there is none).
func (s *Service) CacheListenerBackend() uint32 { return s.cache.backend.Load() }

// CacheNotices is how many change notifications the cache has applied.
func (s *Service) CacheNotices() int64 { return s.cache.notices.Load() }

// CacheLoads is how many scene reads went to the database (cache misses and bypasses).
func (s *Service) CacheLoads() int64 { return s.cache.loads.Load() }

// sceneByID returns the scene with id whatever its integration or state (the caller scopes
// it), with its owner's external user id; nil when there is none.
func (s *Service) sceneByID(ctx context.Context, id string) (*ent.Scene, error) {
	return s.cache.scene(ctx, id, s.scenes.ByID)
}

// sceneChanged announces a change of the scene to every process's cache (this one included).
// Call it inside the transaction that makes the change: Postgres delivers a NOTIFY only if the
// transaction commits, and only after it, so no process drops its entry and reloads the old row
// before the change is visible. Every writer of the scenes table must call it (the retention
// archive included); a change made without it stays invisible to cached readers.
func sceneChanged(ctx context.Context, tx *ent.Tx, integrationID, sceneID string) error {
	return db.NotifyScenesChanged(ctx, tx, integrationID, sceneID)
}

// invalidateScene drops every cached entry of a scene in this process (spec, DELETE side
// effect 5: scene page and metadata, and the integration's list pages, the home portfolio).
// Call it once the change has committed, so this process answers from the new state at once;
// the other processes drop theirs on the NOTIFY that sceneChanged sent with the change.
func (s *Service) invalidateScene(_ context.Context, integrationID, sceneID string) {
	s.cache.invalidate(integrationID, sceneID)
}
