//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/gateway"
	"github.com/splathost/splathost/internal/allinone"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/routes"
)

// sqlLog records the statements an ent client sends.
type sqlLog struct {
	mu    sync.Mutex
	stmts []string
}

func (l *sqlLog) record(_ context.Context, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, fmt.Sprint(v...))
}

// take returns the statements recorded since the last take, and forgets them.
func (l *sqlLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.stmts
	l.stmts = nil
	return out
}

// startRecordedSceneProcess is a scene service (with trending) behind its own gateway whose ent
// client records every statement it sends, on the test stack's stores.
func startRecordedSceneProcess(t *testing.T) (string, *sqlLog) {
	t.Helper()
	cfg := env.Config
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d, err := db.Open(ctx, cfg.PostgresURL)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	rec := &sqlLog{}
	sqlDB := stdlib.OpenDBFromPool(d.Pool)
	sqlDB.SetMaxIdleConns(0)
	d.Ent = ent.NewClient(ent.Driver(dialect.DebugWithContext(entsql.OpenDB(dialect.Postgres, sqlDB), rec.record)))
	d.Read = d.Ent // the lag-tolerant reads too (trending's), recorded on the primary
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := objectstore.New(cfg)
	require.NoError(t, err)
	views, err := analytics.OpenViews(ctx, cfg.ClickHouseAddr, cfg.ClickHouseDB)
	require.NoError(t, err)
	svc := allinone.NewSceneService(cfg, log, d, st, views, map[string]httpx.Check{"postgres": d.Ping})
	go svc.Listen(ctx)
	sceneURL := serve(t, ctx, svc.App)
	ints := credentials.NewCache(d.Pool, log)
	go ints.Listen(ctx)
	gw, err := gateway.New(gateway.Options{
		Log: log, BodyLimit: cfg.BodyLimit, AdminToken: cfg.AdminToken, InternalSecret: []byte(cfg.InternalSecret),
		Integrations: ints,
		Upstreams:    []gateway.Upstream{{Name: "scene", Prefixes: routes.Scene, URL: sceneURL}},
	})
	require.NoError(t, err)
	url := serve(t, ctx, gw)
	require.Eventually(t, func() bool { return svc.CacheLive() && ints.Live() }, 10*time.Second, 20*time.Millisecond)
	return url, rec
}

// TestListsAndTrendingDoNotReadLevelData: a list page and trending never show levelData (up to
// 256 KiB per scene), so they must not read it: every statement they send selects the scene
// columns without level_data, while the single-scene read, which shows it, does read it.
func TestListsAndTrendingDoNotReadLevelData(t *testing.T) {
	tn := newTenant(t)
	const owner = "columns-owner"
	sc := commitScene(t, tn, owner, 4)
	id := sc["id"].(string)
	big := map[string]any{"notes": strings.Repeat("n", 200<<10)}
	editor := sessionHeaders(editorToken(t, tn, owner))
	r := do(t, "PATCH", editorPath("/splats/"+id), editor, map[string]any{"levelData": big, "visibility": "public"})
	require.Equal(t, 200, r.Status, string(r.Raw))

	url, rec := startRecordedSceneProcess(t)
	rec.take()
	scenesRead := func(stmts []string) []string {
		var out []string
		for _, s := range stmts {
			if strings.Contains(s, `FROM "scenes"`) {
				out = append(out, s)
			}
		}
		return out
	}

	for _, path := range []string{"/api/v1/splats", "/api/v1/splats?featured=false&sort=viewCount", "/api/v1/splats/trending?limit=5"} {
		for _, eu := range []string{"", owner} {
			r := doAt(t, url, "GET", path, tn.keys(eu), nil)
			require.Equal(t, 200, r.Status, string(r.Raw))
			items := r.Body["splats"].([]any)
			require.Len(t, items, 1, "%s lists the scene", path)
			require.NotContains(t, items[0].(map[string]any), "levelData")
			reads := scenesRead(rec.take())
			require.NotEmpty(t, reads, "%s read scenes", path)
			for _, s := range reads {
				require.NotContains(t, s, "level_data", "%s reads levelData it never returns: %s", path, s)
				require.Contains(t, s, `"scenes"."title"`, "%s selects the columns it renders", path)
			}
		}
	}

	// The control: the single-scene read shows levelData, and reads it.
	r = doAt(t, url, "GET", splatPath(id), tn.keys(owner), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	reads := scenesRead(rec.take())
	require.NotEmpty(t, reads)
	require.True(t, strings.Contains(strings.Join(reads, "\n"), "level_data"), "the recorder sees the column: %v", reads)
}
