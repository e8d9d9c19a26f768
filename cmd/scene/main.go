// Command scene runs the scene service (uploads, scenes, clone, trending) behind a split gateway.
package main

import (
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/routes"
	"github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/internal/webhookstart"
	"github.com/splathost/splathost/services/scene"
)

func main() {
	rt := boot.Init("scene", true)
	defer rt.Close()
	d := rt.DB()
	store := rt.Store()
	views := rt.Views()
	tc := rt.Temporal()
	svc := scene.New(d, store, rt.Log, rt.Config.AssetBase(), scene.ClonesFrom(tc, rt.Config))
	svc.UseViews(views)
	svc.UseAssetURLs(scenes.NewAssetURLs(rt.Config))
	hooks, err := webhookstart.Starter(tc, rt.Config, d.Ent, rt.Log)
	if err != nil {
		boot.Fatal(rt.Log, "webhooks", err)
	}
	svc.UseWebhookStarter(hooks)
	// Scene reads are served from memory while the LISTEN connection is up; every change is
	// announced with a NOTIFY, so this process drops its copies whichever process made it.
	go svc.Listen(rt.Ctx)
	app := boot.ServiceApp("scene", rt.Config, rt.Log, routes.Scene, svc.Register, map[string]httpx.Check{
		"postgres": d.Ping, "objectstore": store.Ready,
		"clickhouse": views.Ping,
	})
	rt.Serve(app, rt.Config.SceneAddr)
}
