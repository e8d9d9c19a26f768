// Command session runs the session service (embed sessions, embed API and pages) behind a
// split gateway.
package main

import (
	"context"

	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/services/session"
)

func main() {
	cfg, err := config.Load()
	log := boot.Logger(cfg, "session")
	if err == nil {
		err = cfg.RequireSecrets()
	}
	if err != nil {
		boot.Fatal(log, "configuration", err)
	}
	ctx, cancel := boot.SignalContext()
	defer cancel()
	stopTel, err := boot.Telemetry(ctx, cfg, "session")
	if err != nil {
		boot.Fatal(log, "telemetry", err)
	}
	defer stopTel(context.Background())
	d, err := boot.OpenDB(ctx, cfg)
	if err != nil {
		boot.Fatal(log, "postgres", err)
	}
	defer d.Close()
	svc := session.New(d, log)
	app := boot.ServiceApp("session", cfg, log, session.Prefixes, svc.Register,
		map[string]httpx.Check{"postgres": d.Ping})
	log.Info("listening", "addr", cfg.SessionAddr)
	if err := boot.Serve(ctx, app, cfg.SessionAddr, cfg.ShutdownTimeout); err != nil {
		log.Error("serve", "error", err)
	}
}
