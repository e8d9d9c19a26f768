package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/media"
	"github.com/splathost/splathost/workflows"
)

// Converter finds the pinned splat-transform and checks it is the version media/package.json
// pins, so every rendition of a deployment comes from one converter.
func Converter(ctx context.Context, cfg config.Config) (media.Transform, error) {
	cli, err := media.FindSplatTransform(cfg.SplatTransform)
	if err != nil {
		return media.Transform{}, err
	}
	t := media.Transform{CLI: cli, Timeout: cfg.RenditionTimeout, MaxRSS: int64(cfg.RenditionMaxMemory),
		// Two encoding threads per conversion: the SOG encoder's default of four only
		// oversubscribes the small machines the media worker is sized for; scale out instead.
		Workers: 2}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := t.Version(cctx)
	if err != nil {
		return media.Transform{}, err
	}
	if v != media.SplatTransformVersion {
		return media.Transform{}, fmt.Errorf("splat-transform %s at %s, want the pinned %s (run make deps)", v, cli, media.SplatTransformVersion)
	}
	return t, nil
}

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
// up by a long conversion.
func RunMedia(ctx context.Context, c client.Client, cfg config.Config, deps Deps, conv media.Transform) error {
	log := deps.Log
	work := filepath.Join(os.TempDir(), "splathost-media")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return err
	}
	w := worker.New(c, cfg.MediaTaskQueue, worker.Options{WorkerStopTimeout: cfg.ShutdownTimeout,
		MaxConcurrentActivityExecutionSize: cfg.RenditionConcurrency + 4})
	hooks, err := webhookSettings(c, cfg)
	if err != nil {
		return err
	}
	acts := &activities.Activities{Ent: deps.DB.Ent, Objects: deps.Store.Client, Bucket: deps.Store.Bucket,
		AssetBase: cfg.AssetBase(), PublicBase: cfg.PublicBase(), Log: log,
		Events:     activityEvents(c, cfg, deps.DB.Ent, log, hooks),
		Renditions: activities.NewRenditionSettings(conv, cfg.RenditionLODMin, work, cfg.RenditionConcurrency)}
	n := workflows.RegisterMedia(w) + activities.Register(w, acts)
	if err := waitHealthy(ctx, c, log); err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	log.Info("media worker polling", "taskQueue", cfg.MediaTaskQueue, "registered", n, "converter", conv.CLI)
	<-ctx.Done()
	w.Stop()
	return nil
}
