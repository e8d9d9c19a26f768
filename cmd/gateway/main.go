// Command gateway runs the public HTTP gateway in front of the user, scene and session services
// running as their own processes.
package main

import (
	"context"

	"github.com/splathost/splathost/gateway"
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/services/scene"
	"github.com/splathost/splathost/services/session"
	"github.com/splathost/splathost/services/user"
)

func main() {
	cfg, err := config.Load()
	log := boot.Logger(cfg, "gateway")
	if err == nil {
		err = cfg.RequireSecrets()
	}
	if err != nil {
		boot.Fatal(log, "configuration", err)
	}
	ctx, cancel := boot.SignalContext()
	defer cancel()
	stopTel, err := boot.Telemetry(ctx, cfg, "gateway")
	if err != nil {
		boot.Fatal(log, "telemetry", err)
	}
	defer stopTel(context.Background())
	d, err := boot.OpenDB(ctx, cfg)
	if err != nil {
		boot.Fatal(log, "postgres", err)
	}
	defer d.Close()
	ints := user.NewIntegrations(d.Pool, log)
	go ints.Listen(ctx)
	app, err := gateway.New(gateway.Options{
		Log: log, BodyLimit: cfg.BodyLimit, AdminToken: cfg.AdminToken,
		InternalSecret: []byte(cfg.InternalSecret), Integrations: ints,
		Upstreams: []gateway.Upstream{
			{Name: "user", Prefixes: user.Prefixes, URL: cfg.UserURL},
			{Name: "scene", Prefixes: scene.Prefixes, URL: cfg.SceneURL},
			{Name: "session", Prefixes: session.Prefixes, URL: cfg.SessionURL},
		},
	})
	if err != nil {
		boot.Fatal(log, "gateway", err)
	}
	log.Info("listening", "addr", cfg.GatewayAddr)
	if err := boot.Serve(ctx, app, cfg.GatewayAddr, cfg.ShutdownTimeout); err != nil {
		log.Error("serve", "error", err)
	}
}
