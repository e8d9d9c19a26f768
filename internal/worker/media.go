package worker

import (
	"context"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/resident"
	"github.com/splathost/splathost/internal/webhookstart"
	"github.com/splathost/splathost/media"
	"github.com/splathost/splathost/workflows"
)

// ConverterReady checks the converter is still on disk (a deployment that lost it converts
// nothing).
func ConverterReady(t media.Transform) httpx.Check {
	return func(context.Context) error {
		_, err := os.Stat(t.CLI)
		return err
	}
}

// RunMedia hosts the rendition workflows and every activity on the media task queue until ctx
// ends: the media worker, deployed and scaled apart from the API's worker so that conversion
// load never delays clones, purges or view rollups. Conversions run at most
// cfg.RenditionConcurrency at a time; the short database activities beside them are not held
// up by a long conversion. Its dispatcher starts the renditions of pending scenes
// (renditions_dispatch.go).
func RunMedia(ctx context.Context, c client.Client, cfg config.Config, deps Deps, conv media.Transform) error {
	log := deps.Log
	work, release, err := claimWorkDir(filepath.Join(os.TempDir(), "splathost-media"), cfg.RenditionTimeout, log)
	if err != nil {
		return err
	}
	defer release()
	w := worker.New(c, cfg.MediaTaskQueue, worker.Options{WorkerStopTimeout: cfg.ShutdownTimeout,
		MaxConcurrentActivityExecutionSize: cfg.RenditionConcurrency + 4})
	hooks, err := webhookstart.Settings(c, cfg)
	if err != nil {
		return err
	}
	acts := &activities.Activities{Ent: deps.DB.Ent, Objects: deps.Store.Client, Bucket: deps.Store.Bucket,
		AssetBase: cfg.AssetBase(), PublicBase: cfg.PublicBase(), Log: log,
		Events: activityEvents(c, cfg, deps.DB.Ent, log, hooks),
		Renditions: activities.NewRenditionSettings(conv, cfg.RenditionLODMin, work, lanesOf(cfg),
			cfg.RenditionConcurrency, cfg.RenditionSmallConcurrency)}
	n := workflows.RegisterMedia(w) + activities.Register(w, acts)
	if err := waitHealthy(ctx, c, log); err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer resident.AfterStart()()
	registerRenditionBacklog(deps.DB.Pool)
	disp := &renditionDispatcher{client: c, pool: deps.DB.Pool, queue: cfg.MediaTaskQueue,
		lanes: lanesOf(cfg), windows: dispatchWindows(cfg), log: log}
	go disp.run(ctx)
	log.Info("media worker polling", "taskQueue", cfg.MediaTaskQueue, "registered", n, "converter", conv.CLI,
		"renditionWindows", disp.windows)
	<-ctx.Done()
	w.Stop()
	return nil
}
