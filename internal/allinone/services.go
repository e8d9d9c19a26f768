package allinone

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/gateway"
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/routes"
	"github.com/splathost/splathost/internal/sessiontoken"
	"github.com/splathost/splathost/services/scene"
	"github.com/splathost/splathost/services/session"
	"github.com/splathost/splathost/services/user"
)

// The services one at a time, each mounted on its own app under its prefixes as its binary
// mounts it, over stores the caller opens: for the processes of a split deployment that a test
// runs beside the product's (the e2e tests' split gateways, a second scene process). Only this
// package and cmd/ import the services, so the tests take them from here.

// SceneService is a scene service of its own and its app. Its cache (Listen, CacheLive,
// CacheNotices) is its own, as another process's would be.
type SceneService struct {
	*scene.Service
	// App serves routes.Scene with checks as readiness.
	App *fiber.App
}

// NewSceneService is the scene service over d and store (nil: none), starting no clones and
// sending no webhooks; with views it ranks trending from ClickHouse.
func NewSceneService(cfg config.Config, log *slog.Logger, d *db.DB, store *objectstore.Store, views *analytics.Views,
	checks map[string]httpx.Check) *SceneService {
	svc := scene.New(d, store, log, cfg.AssetBase(), scene.Clones{})
	if views != nil {
		svc.UseViews(views)
	}
	return &SceneService{Service: svc, App: boot.ServiceApp("scene", cfg, log, routes.Scene, svc.Register, checks)}
}

// UserApp is the user service over d, serving routes.User, starting its workflows (a customer's
// purge) through tc; without webhooks its registry answers 503.
func UserApp(cfg config.Config, log *slog.Logger, d *db.DB, tc client.Client, checks map[string]httpx.Check) *fiber.App {
	users := user.New(d, log, nil, user.Temporal{Client: tc, TaskQueue: cfg.TaskQueue})
	return boot.ServiceApp("user", cfg, log, routes.User, users.Register, checks)
}

// SessionApp is the session service over d, serving routes.Session, minting sessions with keys.
func SessionApp(cfg config.Config, log *slog.Logger, d *db.DB, keys *sessiontoken.Keys, checks map[string]httpx.Check) *fiber.App {
	return boot.ServiceApp("session", cfg, log, routes.Session, session.New(d, log, keys).Register, checks)
}

// SessionVerifier is a gateway's check of session bearers (gateway.Options.Sessions): the session
// service's, over keys and the gateway's integration cache.
func SessionVerifier(keys *sessiontoken.Keys, ints *credentials.Cache) gateway.SessionVerifier {
	return session.NewVerifier(keys, ints)
}
