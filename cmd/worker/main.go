// Command worker hosts splathost's Temporal workflows and activities, with /healthz and /readyz
// on SPLATHOST_WORKER_HEALTH_ADDR.
package main

import (
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/worker"
)

func main() {
	rt := boot.Init("worker", false)
	defer rt.Close()
	tc, err := worker.Dial(rt.Config, rt.Log)
	if err != nil {
		boot.Fatal(rt.Log, "temporal", err)
	}
	defer tc.Close()
	health := httpx.NewApp("worker", rt.Log, 4096)
	httpx.MountHealth(health, rt.Log, map[string]httpx.Check{"temporal": worker.Ready(tc)})
	go func() {
		if err := boot.Serve(rt.Ctx, health, rt.Config.WorkerHealthAddr, rt.Config.ShutdownTimeout); err != nil {
			boot.Fatal(rt.Log, "health server", err)
		}
	}()
	if err := worker.Run(rt.Ctx, tc, rt.Config, rt.Log); err != nil {
		boot.Fatal(rt.Log, "worker", err)
	}
}
