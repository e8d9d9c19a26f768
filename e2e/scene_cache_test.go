//go:build e2e

package e2e

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/gateway"
	"github.com/splathost/splathost/internal/allinone"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/routes"
)

// sceneProcess is a second scene service behind its own gateway, with its own database pool and
// caches, as other processes of a split deployment would be, on the test stack's stores.
type sceneProcess struct {
	url string // its gateway
	svc *allinone.SceneService
}

func startSceneProcess(t *testing.T) *sceneProcess {
	t.Helper()
	cfg := env.Config
	d, err := db.Open(context.Background(), cfg.PostgresURL)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	logf, err := os.Create(filepath.Join(env.Dir, "scene-process-"+strings.ReplaceAll(t.Name(), "/", "_")+".log"))
	require.NoError(t, err)
	t.Cleanup(func() { logf.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // cleanups run last first: this one before the log and the pool close
	log := slog.New(slog.NewJSONHandler(logf, nil))
	st, err := objectstore.New(cfg)
	require.NoError(t, err)
	checks := map[string]httpx.Check{"postgres": d.Ping}
	svc := allinone.NewSceneService(cfg, log, d, st, nil, checks)
	go svc.Listen(ctx)
	sceneURL := serve(t, ctx, svc.App)
	ints := credentials.NewCache(d.Pool, log)
	go ints.Listen(ctx)
	gw, err := gateway.New(gateway.Options{
		Log: log, BodyLimit: cfg.BodyLimit, AdminToken: cfg.AdminToken, InternalSecret: []byte(cfg.InternalSecret),
		Integrations: ints,
		// Only the scene service: customers are provisioned through the main gateway.
		Upstreams: []gateway.Upstream{{Name: "scene", Prefixes: routes.Scene, URL: sceneURL}},
	})
	require.NoError(t, err)
	p := &sceneProcess{url: serve(t, ctx, gw), svc: svc}
	require.Eventually(t, func() bool { return svc.CacheLive() && ints.Live() }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		r, err := http.Get(p.url + "/readyz")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	}, 10*time.Second, 50*time.Millisecond)
	return p
}

// settle waits until the process has applied the notifications of the changes made so far
// (no new one for 300 ms): the setup's commits notify every process, and one that lands after a
// read has started keeps that read out of the cache, as it must, which a test counting cache
// loads would take for a miss.
func settle(t *testing.T, p *sceneProcess) {
	t.Helper()
	last, since := p.svc.CacheNotices(), time.Now()
	require.Eventually(t, func() bool {
		if n := p.svc.CacheNotices(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 300*time.Millisecond
	}, 10*time.Second, 20*time.Millisecond)
}

// sceneAt is GET /api/v1/splats/{id} through base: its status and, for a 200, the splat.
func sceneAt(t *testing.T, base string, tn tenant, eu, id string) (int, map[string]any) {
	t.Helper()
	r := doAt(t, base, "GET", splatPath(id), tn.keys(eu), nil)
	if r.Status != 200 {
		return r.Status, nil
	}
	return r.Status, splatOf(r)
}

// titleAt is the scene's title through base, or "" when it is not found.
func titleAt(t *testing.T, base string, tn tenant, eu, id string) string {
	t.Helper()
	status, s := sceneAt(t, base, tn, eu, id)
	if status == 404 {
		return ""
	}
	require.Equal(t, 200, status)
	return s["title"].(string)
}

// idsAt lists one page through base and returns its ids and titles.
func idsAt(t *testing.T, base string, tn tenant, eu, query string) (ids, titles []string) {
	t.Helper()
	r := doAt(t, base, "GET", "/api/v1/splats?"+query, tn.keys(eu), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	for _, it := range r.Body["splats"].([]any) {
		m := it.(map[string]any)
		requireItemShape(t, m)
		require.Equal(t, eu != "" && m["externalUserId"] == eu, m["isOwner"], "isOwner is the caller's")
		ids, titles = append(ids, m["id"].(string)), append(titles, m["title"].(string))
	}
	return ids, titles
}

func TestSceneCacheFollowsChangesInEveryProcess(t *testing.T) {
	other := startSceneProcess(t)
	a, b := newTenant(t), newTenant(t)
	id := newScene(t, a, "alice", 1)["id"].(string)
	newScene(t, a, "bob", 1) // provisions bob
	settle(t, other)

	// Warm both processes; the other one answers repeated reads from memory.
	for _, base := range []string{env.URL, other.url} {
		require.Equal(t, "Scene alice", titleAt(t, base, a, "alice", id))
	}
	loads := other.svc.CacheLoads()
	for range 3 {
		require.Equal(t, "Scene alice", titleAt(t, other.url, a, "alice", id))
		require.Equal(t, "Scene alice", titleAt(t, other.url, a, "", id))
	}
	require.Equal(t, loads, other.svc.CacheLoads(), "served from the cache")

	// What depends on the caller is never taken from the cache: scope, visibility and isOwner.
	for _, base := range []string{env.URL, other.url} {
		status, _ := sceneAt(t, base, a, "bob", id)
		require.Equal(t, 404, status, "private: not for another customer")
		status, _ = sceneAt(t, base, b, "", id)
		require.Equal(t, 404, status, "not for another integration")
		status, _ = sceneAt(t, base, b, "alice", id)
		require.Equal(t, 404, status, "not for another integration's alice")
		_, s := sceneAt(t, base, a, "alice", id)
		require.Equal(t, true, s["isOwner"])
		_, s = sceneAt(t, base, a, "", id)
		require.Equal(t, false, s["isOwner"])
		require.Equal(t, "alice", s["externalUserId"])
	}

	// A PATCH through the main gateway: every process answers from the new state at once (the
	// other one's read waits for the change's NOTIFY: db.Barrier).
	r := do(t, "PATCH", splatPath(id), a.keys("alice"), map[string]any{"title": "Renamed", "visibility": "public"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "Renamed", titleAt(t, env.URL, a, "alice", id))
	require.Equal(t, "Renamed", titleAt(t, other.url, a, "alice", id), "read-your-writes in another process")
	for _, base := range []string{env.URL, other.url} {
		status, s := sceneAt(t, base, a, "bob", id)
		require.Equal(t, 200, status, "public now")
		require.Equal(t, false, s["isOwner"])
		require.Equal(t, "alice", s["externalUserId"])
		_, s = sceneAt(t, base, a, "alice", id)
		require.Equal(t, true, s["isOwner"])
		status, _ = sceneAt(t, base, b, "", id)
		require.Equal(t, 404, status)
	}

	// The other way round: a change through the other process reaches the main one.
	r = doAt(t, other.url, "PATCH", splatPath(id), a.keys("alice"), map[string]any{"title": "From afar"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "From afar", titleAt(t, other.url, a, "alice", id))
	require.Equal(t, "From afar", titleAt(t, env.URL, a, "alice", id))

	// Featuring is a change too.
	r = do(t, "PATCH", splatPath(id), a.keys(""), map[string]any{"featured": true})
	require.Equal(t, 200, r.Status, string(r.Raw))
	_, s := sceneAt(t, other.url, a, "", id)
	require.Equal(t, true, s["featured"])
	_, s = sceneAt(t, env.URL, a, "", id)
	require.Equal(t, true, s["featured"])

	// A change made by another service (the customer's billing lifecycle, in the user service)
	// is read at once too: suspended keeping nothing archives the scene (404), active restores it.
	for _, st := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{"billingState": "suspended", "keepSplatIds": []string{}, "limitBytes": 1 << 30, "maxSplats": 10}, 404},
		{map[string]any{"billingState": "active", "status": "active", "limitBytes": 1 << 30, "maxSplats": 10}, 200},
	} {
		lifecyclePut(t, a, "alice", st.body)
		for _, base := range []string{other.url, env.URL} {
			status, _ := sceneAt(t, base, a, "alice", id)
			require.Equal(t, st.status, status, "after %v", st.body)
		}
	}

	// A failed change changes nothing anywhere.
	requireEnvelope(t, do(t, "PATCH", splatPath(id), a.keys("alice"), map[string]any{"title": ""}), 400)
	require.Equal(t, "From afar", titleAt(t, env.URL, a, "alice", id))
	require.Equal(t, "From afar", titleAt(t, other.url, a, "alice", id))

	// DELETE: 404 everywhere.
	require.Equal(t, 200, do(t, "DELETE", splatPath(id), a.keys("alice"), nil).Status)
	for _, base := range []string{env.URL, other.url} {
		for _, eu := range []string{"alice", "bob", ""} {
			status, _ := sceneAt(t, base, a, eu, id)
			require.Equal(t, 404, status, "deleted, for %q", eu)
		}
	}
}

// warmScene starts another scene process and, in a new tenant, a scene of customer eu read once
// through that process, so that it holds the row in its cache.
func warmScene(t *testing.T, eu string) (*sceneProcess, tenant, string) {
	t.Helper()
	other := startSceneProcess(t)
	a := newTenant(t)
	id := newScene(t, a, eu, 1)["id"].(string)
	settle(t, other)
	require.Equal(t, "Scene "+eu, titleAt(t, other.url, a, eu, id))
	return other, a, id
}

// TestSceneCacheNeverServesAChangeItWasNotToldOf: with the other process's LISTEN connection
// frozen (its Postgres backend stopped: the change's NOTIFY cannot reach it), a read right
// after a change committed elsewhere still answers the new state: the hit waits for its
// barrier, which cannot come back either, and the read goes to the database.
func TestSceneCacheNeverServesAChangeItWasNotToldOf(t *testing.T) {
	other, a, id := warmScene(t, "frozen")
	loads := other.svc.CacheLoads()
	require.Equal(t, "Scene frozen", titleAt(t, other.url, a, "frozen", id))
	require.Equal(t, loads, other.svc.CacheLoads(), "cached")

	pid := int(other.svc.CacheListenerBackend())
	require.NotZero(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	r := do(t, "PATCH", splatPath(id), a.keys("frozen"), map[string]any{"title": "Changed"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.True(t, other.svc.CacheLive(), "the frozen connection is not noticed yet")
	require.Equal(t, "Changed", titleAt(t, other.url, a, "frozen", id), "never the cached row")
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
}

func TestSceneCacheListPagesFollowCommits(t *testing.T) {
	other := startSceneProcess(t)
	a := newTenant(t)
	first := newScene(t, a, "lister", 1)["id"].(string)
	newScene(t, a, "someone", 1)
	settle(t, other)

	queries := []struct{ eu, query string }{{"lister", ""}, {"", ""}, {"", "limit=1"}, {"lister", "sort=updatedAt&dir=asc"}}
	for _, q := range queries {
		for _, base := range []string{env.URL, other.url} {
			ids, _ := idsAt(t, base, a, q.eu, q.query)
			if q.query != "limit=1" {
				require.Contains(t, ids, first)
			}
		}
	}
	loads := other.svc.CacheLoads()
	for _, q := range queries {
		idsAt(t, other.url, a, q.eu, q.query)
	}
	require.Equal(t, loads, other.svc.CacheLoads(), "served from the cache")

	// A new commit (through the main gateway) shows in every process's pages.
	second := newScene(t, a, "lister", 1)["id"].(string)
	for _, q := range []struct{ eu, query string }{{"lister", ""}, {"", ""}} {
		ids, _ := idsAt(t, env.URL, a, q.eu, q.query)
		require.Equal(t, second, ids[0], "newest first, at once in the committing process")
		ids, _ = idsAt(t, other.url, a, q.eu, q.query)
		require.Equal(t, second, ids[0], "and at once in the other one")
	}
	ids, _ := idsAt(t, other.url, a, "", "limit=1")
	require.Equal(t, []string{second}, ids)

	// An edit shows in the pages too (here sorted by updatedAt, where it also moves).
	r := do(t, "PATCH", splatPath(first), a.keys("lister"), map[string]any{"title": "Edited"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	for _, base := range []string{env.URL, other.url} {
		ids, titles := idsAt(t, base, a, "lister", "sort=updatedAt&dir=asc")
		require.Equal(t, []string{first, "Edited"}, []string{ids[len(ids)-1], titles[len(titles)-1]})
		require.Len(t, ids, 2)
	}

	// A delete removes it from every page.
	r = do(t, "DELETE", splatPath(second), a.keys("lister"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	for _, base := range []string{env.URL, other.url} {
		ids, _ = idsAt(t, base, a, "lister", "")
		require.Equal(t, []string{first}, ids)
	}
}

// TestSceneCacheFlushesWhenItsListenerReconnects: a change the cache was never told about (one
// made behind the product's back, without a NOTIFY) is served stale only while the listener
// holds; when its connection drops the cache is bypassed, and on reconnect it is flushed.
func TestSceneCacheFlushesWhenItsListenerReconnects(t *testing.T) {
	other, a, id := warmScene(t, "quiet")
	_, err := env.Process.DB.Pool.Exec(context.Background(), `UPDATE scenes SET title = 'Changed quietly' WHERE id = $1`, id)
	require.NoError(t, err)
	require.Equal(t, "Scene quiet", titleAt(t, other.url, a, "quiet", id), "no NOTIFY, so the cached row is still served")

	// Drop every scene-cache listener connection (this test's process reconnects too).
	_, err = env.Process.DB.Pool.Exec(context.Background(),
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN splathost_scenes'`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return titleAt(t, other.url, a, "quiet", id) == "Changed quietly" }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, other.svc.CacheLive, 10*time.Second, 20*time.Millisecond, "the listener reconnects")
	loads := other.svc.CacheLoads()
	require.Equal(t, "Changed quietly", titleAt(t, other.url, a, "quiet", id))
	require.Equal(t, "Changed quietly", titleAt(t, other.url, a, "quiet", id))
	require.LessOrEqual(t, other.svc.CacheLoads(), loads+1, "cached again once listening")
}
