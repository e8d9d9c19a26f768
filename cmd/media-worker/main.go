// Command media-worker converts scenes into their renditions (contract item 15): it hosts the
// SceneRenditions workflow and its activities on the media task queue
// (SPLATHOST_MEDIA_TASK_QUEUE), running the pinned @playcanvas/splat-transform with node, with
// /healthz and /readyz on SPLATHOST_MEDIA_HEALTH_ADDR. It is deployed and scaled apart from the
// API's worker (cmd/worker), so conversion load never delays clones, purges or view rollups.
package main

import (
	"context"
	"errors"

	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/temporalconn"
	"github.com/splathost/splathost/internal/worker"
	"github.com/splathost/splathost/media"
)

func main() {
	rt := boot.Init("media-worker", false)
	defer rt.Close()
	d := rt.DB()
	store := rt.Store()
	conv, err := media.Converter(rt.Ctx, rt.Config)
	if err != nil {
		boot.Fatal(rt.Log, "converter", err)
	}
	tc := rt.Temporal()
	rt.ServeHealth(rt.Config.MediaHealthAddr, map[string]httpx.Check{
		"temporal": temporalconn.Ready(tc), "postgres": d.Ping, "objectstore": store.Ready, "converter": worker.ConverterReady(conv),
	}, nil)
	err = worker.RunMedia(rt.Ctx, tc, rt.Config, worker.Deps{DB: d, Store: store, Log: rt.Log}, conv)
	if err != nil && !errors.Is(err, context.Canceled) {
		boot.Fatal(rt.Log, "media worker", err)
	}
}
