// Package allinone assembles the whole product in one process: the gateway with every service
// mounted in-process, and the Temporal worker. cmd/splathost and the test harness use it.
package allinone

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/gateway"
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/ratelimit"
	"github.com/splathost/splathost/internal/roomproto"
	"github.com/splathost/splathost/internal/routes"
	scenerules "github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/internal/sessiontoken"
	"github.com/splathost/splathost/internal/temporalconn"
	"github.com/splathost/splathost/internal/webhookstart"
	"github.com/splathost/splathost/internal/worker"
	"github.com/splathost/splathost/media"
	"github.com/splathost/splathost/services/scene"
	"github.com/splathost/splathost/services/session"
	"github.com/splathost/splathost/services/user"
	"github.com/splathost/splathost/web"
)

// Process is a running all-in-one splathost: the gateway with every service mounted in-process,
// and the worker.
type Process struct {
	App *fiber.App
	DB  *db.DB
	// Integrations is the gateway's credential cache.
	Integrations *credentials.Cache
	// Scenes is the scene service, for tests that watch its cache.
	Scenes *scene.Service
	// RateLimits is the gateway's rate limiting, for tests that raise a limit for themselves.
	RateLimits *gateway.RateLimits
	Temporal   client.Client
	CH         driver.Conn
	// Views is the ClickHouse view store over CH; Streamer moves accepted views into ClickHouse
	// through a view store of its own (its own connections, so purges, the retention job and
	// reads never make the views wait).
	Views    *analytics.Views
	Streamer *analytics.Streamer
	ingest   *analytics.Views
	stop     context.CancelFunc
	done     chan struct{}
	// roomsDone is closed when the multiplayer rooms have closed their WebSockets and deleted
	// their presence rows, which needs the database.
	roomsDone chan struct{}
}

// Start builds the whole product in one process. Serve App; Close stops the rest.
func Start(ctx context.Context, cfg config.Config, log *slog.Logger) (*Process, error) {
	if err := cfg.RequireSecrets(); err != nil {
		return nil, err
	}
	d, err := boot.OpenDB(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	store, err := objectstore.New(cfg)
	if err != nil {
		d.Close()
		return nil, err
	}
	ch, err := analytics.Open(ctx, cfg.ClickHouseAddr, cfg.ClickHouseDB)
	if err != nil {
		d.Close()
		return nil, err
	}
	tc, err := temporalconn.Dial(cfg, log)
	if err != nil {
		d.Close()
		ch.Close()
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	p := &Process{DB: d, Temporal: tc, CH: ch, stop: stop, done: make(chan struct{}), roomsDone: make(chan struct{})}

	ints := credentials.NewCache(d.Pool, log)
	users := user.New(d, log, ints.Flush, user.Temporal{Client: tc, TaskQueue: cfg.TaskQueue})
	scenes := scene.New(d, store, log, cfg.AssetBase(), scene.ClonesFrom(tc, cfg))
	hooks, err := webhookstart.Registry(tc, cfg, d.Ent, log)
	if err != nil {
		p.Close()
		return nil, err
	}
	users.UseWebhooks(hooks)
	scenes.UseWebhookStarter(hooks.Starter)
	views, err := analytics.NewViews(ch, cfg.ClickHouseDB)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.Views = views
	ingest, err := analytics.OpenViews(ctx, cfg.ClickHouseAddr, cfg.ClickHouseDB)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.ingest = ingest
	p.Streamer = &analytics.Streamer{Pool: d.Pool, Views: ingest, Log: log}
	scenes.UseViews(views)
	urls := scenerules.NewAssetURLs(cfg)
	scenes.UseAssetURLs(urls)
	keys, err := sessiontoken.NewKeys(cfg.SessionKeys)
	if err != nil {
		p.Close()
		return nil, err
	}
	sessions := session.New(d, log, keys)
	sessions.UseAssetURLs(urls)
	// The rooms check rights again from the gateway's own cache, which the user service in
	// this process flushes before it answers a revocation or a customer's status change.
	sessions.Rooms().UseIntegrations(ints)
	sessions.UseBeaconLimits(cfg.RateLimit)
	limits := gateway.NewRateLimits(cfg.RateLimit)
	// Replicas of this binary share their integrations' limits, as split gateways do.
	limits.Share(runCtx, ratelimit.NewPGBuckets(d.Pool), log)
	app, err := gateway.New(gateway.Options{
		Log: log, BodyLimit: cfg.BodyLimit, RequestBudget: cfg.RequestBudget, AdminToken: cfg.AdminToken, Pprof: cfg.Pprof,
		InternalSecret: []byte(cfg.InternalSecret), Integrations: ints,
		Sessions:    session.NewVerifier(keys, ints),
		Assets:      web.Dist,
		Idempotency: idempotency.NewStore(d.Pool, log),
		RateLimits:  limits,
		Upstreams: []gateway.Upstream{
			{Name: "user", Prefixes: routes.User, Register: users.Register},
			{Name: "scene", Prefixes: routes.Scene, Public: routes.ScenePublic, Register: scenes.Register},
			{Name: "session", Prefixes: routes.Session, Upgrade: []string{roomproto.Path}, Register: sessions.Register},
		},
		Ready: map[string]httpx.Check{
			"objectstore": store.Ready,
			"clickhouse":  func(ctx context.Context) error { return ch.Ping(ctx) },
			"temporal":    temporalconn.Ready(tc),
			"room":        sessions.Rooms().Ready,
		},
	})
	if err != nil {
		p.Close()
		return nil, err
	}
	p.App = app
	p.RateLimits = limits
	p.Integrations = ints
	p.Scenes = scenes
	go func() { defer close(p.roomsDone); sessions.Rooms().Run(runCtx) }()
	// The media worker runs here too when the converter is installed; without it the product
	// works and renditions wait, pending, for a media worker.
	conv, convErr := media.Converter(ctx, cfg)
	if convErr != nil {
		log.Error("no media worker in this process: renditions stay pending", "error", convErr)
	}
	mediaDone := make(chan struct{})
	go func() {
		defer close(mediaDone)
		if convErr == nil {
			if err := worker.RunMedia(runCtx, tc, cfg, worker.Deps{DB: d, Store: store, Log: log}, conv); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("media worker stopped", "error", err)
			}
		}
	}()
	go func() {
		defer close(p.done)
		defer func() { <-mediaDone }()
		go ints.Listen(runCtx)
		go scenes.Listen(runCtx)
		if err := worker.Run(runCtx, tc, cfg, worker.Deps{DB: d, Store: store, Views: views, Streamer: p.Streamer, Log: log}); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("worker stopped", "error", err)
		}
	}()
	return p, nil
}

// Close stops the worker and releases every connection.
func (p *Process) Close() {
	p.stop()
	if p.App != nil {
		<-p.done
		<-p.roomsDone
	}
	p.Temporal.Close()
	p.CH.Close()
	if p.ingest != nil {
		_ = p.ingest.Close()
	}
	p.DB.Close()
}
