// Package scene is the scene service: signed uploads, scene records and their quota, the clone
// API and trending.
package scene

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/scenes"
)

// Service handles the scene service's routes.
type Service struct {
	db    *db.DB
	store *objectstore.Store
	log   *slog.Logger
	// assetBase prefixes every object key to make its public URL.
	assetBase string
	now       func() time.Time
	// cache holds scene rows and list pages; see cache.go.
	cache *sceneCache
	// clones runs the clone jobs; see clone.go.
	clones Clones
	// views ranks trending (ClickHouse), wired by the binary (UseViews). A deleted scene's view
	// records go with its asset purge (deleteScene).
	views *analytics.Views
	// scores caches trending's window scores for a few seconds (trending.go).
	scores scoreCache
	// urls renders and verifies asset-route URLs; assets holds the asset route's caches
	// (assets.go). Wired by the binary (UseAssetURLs).
	urls   *scenes.AssetURLs
	assets assetState
	// events writes the webhook events of scene changes (commit, PATCH, featuring, DELETE) in
	// their transactions.
	events *events.Outbox
	// scenes runs the transactional operations and reads of internal/scenes on s.db.
	scenes *scenes.Store
	// scoresDownUntil (unix ns) skips ClickHouse for a moment after a failed score query.
	scoresDownUntil atomic.Int64
}

// UseAssetURLs wires the asset URL signer: scene answers then carry asset-route URLs and
// /assets/ serves objects. Without it answers keep the stored URLs and /assets/ finds nothing.
func (s *Service) UseAssetURLs(u *scenes.AssetURLs) { s.urls = u }

// New returns the scene service. assetBase is config.Config.AssetBase().
func New(d *db.DB, store *objectstore.Store, log *slog.Logger, assetBase string, clones Clones) *Service {
	s := &Service{db: d, store: store, log: log, assetBase: assetBase, now: time.Now, cache: newSceneCache(d.Pool, log), clones: clones}
	s.events = &events.Outbox{Log: log, Render: func(sc *ent.Scene, ownerEU, productSlug string) any {
		return s.itemOf(sc, ownerEU, productSlug, "")
	}}
	s.scenes = &scenes.Store{DB: d, Events: s.events, Now: func() time.Time { return s.now() },
		Rendition: scenes.RenditionPolicy{MinBytes: clones.RenditionMinBytes, Queue: clones.MediaTaskQueue}}
	return s
}

// UseWebhookStarter starts the deliveries of this service's events right after their commits;
// without it they wait for the webhook re-drive.
func (s *Service) UseWebhookStarter(st events.Starter) { s.events.Starter = st }

// ClonesFrom is the clone settings of cfg on client.
func ClonesFrom(c client.Client, cfg config.Config) Clones {
	return Clones{Client: c, TaskQueue: cfg.TaskQueue, Wait: cfg.CloneWait, AbandonAfter: cfg.CloneAbandonAfter,
		Concurrency: cfg.CloneConcurrency, MediaTaskQueue: cfg.MediaTaskQueue, RenditionMinBytes: int64(cfg.RenditionMinBytes)}
}

// Register mounts the service's routes.
func (s *Service) Register(r fiber.Router) {
	r.Post("/api/v1/uploads/splat-file", s.uploadSplatFile)
	r.Get("/api/v1/uploads/splat-file/:uploadId", s.getMultipart)
	r.Post("/api/v1/uploads/splat-file/:uploadId/complete", s.completeMultipart)
	r.Delete("/api/v1/uploads/splat-file/:uploadId", s.abortMultipart)
	r.Post("/api/v1/uploads/lod-folder", s.uploadLODFolder)
	r.Post("/api/v1/uploads/splat-images", s.uploadSplatImages)
	r.Post("/api/v1/splats", s.commit)
	r.Post("/api/v1/splats/:splatId/clone", s.clone)
	r.Get("/api/v1/splats/:splatId/clone/:jobId", s.pollClone)
	r.Get(renditionsAdminPath, httpx.AdminOnly, s.listRenditions)
	r.Post(renditionsAdminPath+"/:splatId/retry", httpx.AdminOnly, s.retryRendition)
	s.registerAssets(r)
	s.registerScenes(r)
	s.registerEditor(r)
}
