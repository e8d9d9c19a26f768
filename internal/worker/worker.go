// Package worker hosts splathost's workflows and activities on a Temporal client
// (internal/temporalconn dials it). It is its own package so that only the worker binaries link
// the activities and media.
package worker

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/metrics"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/pgnotify"
	"github.com/splathost/splathost/internal/resident"
	"github.com/splathost/splathost/internal/webhookstart"
	"github.com/splathost/splathost/workflows"
)

// Deps are what the activities need: the product database, the asset store and the ClickHouse
// view store, and the view streamer the worker runs beside them.
type Deps struct {
	DB    *db.DB
	Store *objectstore.Store
	Views *analytics.Views
	// Streamer, when set, moves accepted views from the Postgres outbox into ClickHouse for as
	// long as the worker runs (only one streamer of the deployment drains at a time).
	Streamer *analytics.Streamer
	Log      *slog.Logger
}

// Run hosts every workflow and activity on the task queue until ctx ends, and keeps the
// schedules (orphan sweep, purge re-drive) in place.
func Run(ctx context.Context, c client.Client, cfg config.Config, deps Deps) error {
	log := deps.Log
	// On shutdown, running activities get the shutdown timeout to finish or to report their last
	// heartbeat; the next attempt resumes from it.
	w := worker.New(c, cfg.TaskQueue, worker.Options{WorkerStopTimeout: cfg.ShutdownTimeout})
	hooks, err := webhookstart.Settings(c, cfg)
	if err != nil {
		return err
	}
	acts := &activities.Activities{Ent: deps.DB.Ent, Objects: deps.Store.Client, Bucket: deps.Store.Bucket,
		AssetBase: cfg.AssetBase(), PublicBase: cfg.PublicBase(), Workflows: c, Log: log,
		Events: activityEvents(c, cfg, deps.DB.Ent, log, hooks), Webhooks: hooks}
	if deps.Views != nil {
		// A nil *analytics.Views must not become a non-nil interface.
		acts.Views = deps.Views
	}
	if deps.Streamer != nil && deps.Streamer.Names == nil {
		deps.Streamer.Names = sceneNames(deps)
	}
	// The streamer needs no Temporal, so it starts at once and stops when Run returns.
	streamCtx, stopStreamer := context.WithCancel(ctx)
	streamerDone := make(chan struct{})
	go func() {
		defer close(streamerDone)
		if deps.Streamer != nil {
			deps.Streamer.Run(streamCtx)
		}
	}()
	defer func() {
		stopStreamer()
		<-streamerDone
	}()
	n := workflows.Register(w) + activities.Register(w, acts)
	registerBacklogs(deps.DB)
	if deps.Views != nil {
		// The gauge, in every process that runs the worker (the all-in-one too). Where the
		// binary registered it first to share its watch with /readyz, this one is a no-op.
		ClickHouseDDL(deps.Views, cfg.ClickHouseDDLStallAfter)
	}
	// The client is lazy and the worker cannot start without the frontend: wait for it rather
	// than fail, so that the product's start does not depend on Temporal being up first.
	if err := waitHealthy(ctx, c, log); err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	log.Info("worker polling", "taskQueue", cfg.TaskQueue, "registered", n)
	// An idle worker gives back what its boot left resident (package resident).
	defer resident.AfterStart()()
	schedulesDone := make(chan struct{})
	go func() {
		defer close(schedulesDone)
		if cfg.WorkerSchedules {
			keepSchedules(ctx, c, cfg.TaskQueue, log)
		}
	}()
	<-ctx.Done()
	<-schedulesDone
	w.Stop()
	return nil
}

// waitHealthy returns once the Temporal frontend answers, or with ctx's error.
func waitHealthy(ctx context.Context, c client.Client, log *slog.Logger) error {
	delay := 100 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.CheckHealth(cctx, &client.CheckHealthRequest{})
		cancel()
		if err == nil {
			return nil
		}
		if delay >= 5*time.Second {
			log.Warn("waiting for the Temporal frontend", "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// registerBacklogs exports the deployment's backlogs as gauges counted in Postgres at scrape
// time: every worker reports the same figure, the deployment's, not its own share.
func registerBacklogs(d *db.DB) {
	count := func(table string) func() (float64, error) {
		return pgGauge(d.Pool, "SELECT count(*)::float8 FROM "+table)
	}
	metrics.Gauge("splathost_clone_jobs_in_flight", "Clone jobs holding a storage reservation (copying or rolling back).",
		count("clone_jobs"))
	metrics.Gauge("splathost_views_spooled", "Accepted views waiting in the Postgres outbox for ClickHouse.",
		count("view_outboxes"))
	// The oldest row is the first by id (ids follow arrival), so this reads one index entry
	// however long the outbox has grown.
	metrics.Gauge("splathost_views_spooled_oldest_seconds",
		"Age in seconds of the oldest accepted view waiting in the Postgres outbox (0: none).",
		pgGauge(d.Pool, `SELECT coalesce(extract(epoch FROM now() - (SELECT viewed_at FROM view_outboxes ORDER BY id LIMIT 1)), 0)::float8`))
}

// sceneNames is the name sync the streamer's leader runs: it hears the scene change notices on
// a LISTEN connection of its own and writes through the streamer's ClickHouse store.
func sceneNames(deps Deps) *analytics.NameSync {
	return &analytics.NameSync{Pool: deps.DB.Pool, Views: deps.Streamer.Views, Log: deps.Log,
		Listen: func(ctx context.Context, onConnect func(), onNotify func(string)) {
			db.Listen(ctx, deps.DB.Pool, db.Listener{Channel: pgnotify.ScenesChannel, OnConnect: onConnect,
				OnNotify: onNotify, Live: new(atomic.Bool), Log: deps.Log})
		}}
}
