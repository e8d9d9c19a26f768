package scene

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/db"
)

// Cache bounds. A scene row is small (its levelData aside); a list page holds up to
// maxListLimit rows, so list pages are bounded by the rows they hold.
const (
	maxCachedScenes   = 20_000
	maxCachedListRows = 20_000
)

// scenePage is one list page as the database returned it: the rows (with their owners'
// external user ids) and the cursor after them. It depends only on the integration, the
// normalized query and the EU filter; what depends on the caller (isOwner, productSlug) is
// rendered per request.
type scenePage struct {
	rows []*ent.Scene
	next *string
}

// cost is what a page counts against maxCachedListRows; an empty page still takes a slot.
func (p *scenePage) cost() int { return len(p.rows) + 1 }

// sceneCache holds scene rows (GET /api/v1/splats/{id}) and list pages (GET /api/v1/splats) in
// memory. Entries live until a NOTIFY on db.ScenesChannel names their scene or their integration:
// a change drops the scene's entry and every list page of its integration, which keeps list
// caching correct without tracking which page holds which scene (and cheap to reason about when
// view counts start changing often). While the LISTEN connection is down the cache is bypassed,
// because a missed notification would serve a changed or deleted scene.
//
// Cached rows are shared by every caller and never modified: scoping (integration, archived,
// visibility for an EU) and everything caller-dependent is decided per request.
type sceneCache struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu     sync.RWMutex
	scenes map[string]*ent.Scene // by scene id
	// lists holds list pages by integration id, then by pageKey.
	lists    map[string]map[string]*scenePage
	listCost int    // sum of the cached pages' cost
	gen      uint64 // bumped on every invalidation and flush; loads that raced one are not cached
	live     atomic.Bool
	loads    atomic.Int64 // database reads through the cache, for tests and metrics
	notices  atomic.Int64 // notifications applied, so a test can wait for one

	maxScenes, maxListRows int
}

func newSceneCache(pool *pgxpool.Pool, log *slog.Logger) *sceneCache {
	return &sceneCache{pool: pool, log: log, scenes: map[string]*ent.Scene{}, lists: map[string]map[string]*scenePage{},
		maxScenes: maxCachedScenes, maxListRows: maxCachedListRows}
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
	sc, ok := c.scenes[id]
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		return sc, nil
	}
	c.loads.Add(1)
	sc, err := load(ctx, id)
	if err != nil || sc == nil {
		return sc, err
	}
	// A path parameter from Fiber aliases a buffer fasthttp reuses for the next request; a map
	// key must own its bytes or the map silently corrupts.
	key := strings.Clone(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return sc, nil // an invalidation landed while loading: the row may already be stale
	}
	if _, ok := c.scenes[key]; !ok && len(c.scenes) >= c.maxScenes {
		for k := range c.scenes { // map order is random: a random eviction
			delete(c.scenes, k)
			break
		}
	}
	c.scenes[key] = sc
	return sc, nil
}

// page returns a list page of integrationID, from memory when possible.
func (c *sceneCache) page(ctx context.Context, integrationID, key string, load func(context.Context) (*scenePage, error)) (*scenePage, error) {
	if !c.live.Load() {
		c.loads.Add(1)
		return load(ctx)
	}
	c.mu.RLock()
	p, ok := c.lists[integrationID][key]
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
	if p.cost() > c.maxListRows {
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
	for c.listCost+p.cost() > c.maxListRows && c.evictPage() {
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
	delete(c.scenes, sceneID)
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
	c.scenes = map[string]*ent.Scene{}
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
	db.Listen(ctx, c.pool, db.Listener{Channel: db.ScenesChannel, OnConnect: c.flush, OnNotify: c.notified, Live: &c.live, Log: c.log})
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

// CacheNotices is how many change notifications the cache has applied.
func (s *Service) CacheNotices() int64 { return s.cache.notices.Load() }

// CacheLoads is how many scene reads went to the database (cache misses and bypasses).
func (s *Service) CacheLoads() int64 { return s.cache.loads.Load() }

// sceneByID returns the scene with id whatever its integration or state (the caller scopes
// it), with its owner's external user id; nil when there is none.
func (s *Service) sceneByID(ctx context.Context, id string) (*ent.Scene, error) {
	return s.cache.scene(ctx, id, func(ctx context.Context, id string) (*ent.Scene, error) {
		sc, err := s.db.Ent.Scene.Query().Where(scene.ID(id)).
			WithOwner(func(q *ent.ExternalUserQuery) { q.Select(externaluser.FieldExternalUserID) }).
			Only(ctx)
		if ent.IsNotFound(err) {
			return nil, nil
		}
		return sc, err
	})
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
