// Command scene runs the scene service (uploads, scenes, clone, trending) behind a split gateway.
package main

import (
	"context"

	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/services/scene"
)

func main() {
	cfg, err := config.Load()
	log := boot.Logger(cfg, "scene")
	if err == nil {
		err = cfg.RequireSecrets()
	}
	if err != nil {
		boot.Fatal(log, "configuration", err)
	}
	ctx, cancel := boot.SignalContext()
	defer cancel()
	stopTel, err := boot.Telemetry(ctx, cfg, "scene")
	if err != nil {
		boot.Fatal(log, "telemetry", err)
	}
	defer stopTel(context.Background())
	d, err := boot.OpenDB(ctx, cfg)
	if err != nil {
		boot.Fatal(log, "postgres", err)
	}
	defer d.Close()
	store, err := boot.OpenStore(cfg)
	if err != nil {
		boot.Fatal(log, "object store", err)
	}
	ch, err := boot.OpenClickHouse(ctx, cfg)
	if err != nil {
		boot.Fatal(log, "clickhouse", err)
	}
	defer ch.Close()
	svc := scene.New(d, store, log)
	app := boot.ServiceApp("scene", cfg, log, scene.Prefixes, svc.Register, map[string]httpx.Check{
		"postgres": d.Ping, "objectstore": store.Ready,
		"clickhouse": func(ctx context.Context) error { return ch.Ping(ctx) },
	})
	log.Info("listening", "addr", cfg.SceneAddr)
	if err := boot.Serve(ctx, app, cfg.SceneAddr, cfg.ShutdownTimeout); err != nil {
		log.Error("serve", "error", err)
	}
}
