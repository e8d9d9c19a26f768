// Command worker hosts splathost's Temporal workflows and activities, with /healthz and /readyz
// on SPLATHOST_WORKER_HEALTH_ADDR.
package main

import (
	"context"

	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
)

func main() {
	cfg, err := config.Load()
	log := boot.Logger(cfg, "worker")
	if err != nil {
		boot.Fatal(log, "configuration", err)
	}
	ctx, cancel := boot.SignalContext()
	defer cancel()
	stopTel, err := boot.Telemetry(ctx, cfg, "worker")
	if err != nil {
		boot.Fatal(log, "telemetry", err)
	}
	defer stopTel(context.Background())
	tc, err := boot.DialTemporal(cfg, log)
	if err != nil {
		boot.Fatal(log, "temporal", err)
	}
	defer tc.Close()
	health := httpx.NewApp("worker", log, 4096)
	httpx.MountHealth(health, log, map[string]httpx.Check{"temporal": boot.TemporalReady(tc)})
	go func() {
		if err := boot.Serve(ctx, health, cfg.WorkerHealthAddr, cfg.ShutdownTimeout); err != nil {
			log.Error("health server", "error", err)
			cancel()
		}
	}()
	if err := boot.RunWorker(ctx, tc, cfg, log); err != nil {
		boot.Fatal(log, "worker", err)
	}
}
