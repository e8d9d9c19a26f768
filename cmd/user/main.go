// Command user runs the user service (operator API, external users) behind a split gateway.
package main

import (
	"context"

	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/services/user"
)

func main() {
	cfg, err := config.Load()
	log := boot.Logger(cfg, "user")
	if err == nil {
		err = cfg.RequireSecrets()
	}
	if err != nil {
		boot.Fatal(log, "configuration", err)
	}
	ctx, cancel := boot.SignalContext()
	defer cancel()
	stopTel, err := boot.Telemetry(ctx, cfg, "user")
	if err != nil {
		boot.Fatal(log, "telemetry", err)
	}
	defer stopTel(context.Background())
	d, err := boot.OpenDB(ctx, cfg)
	if err != nil {
		boot.Fatal(log, "postgres", err)
	}
	defer d.Close()
	// Gateways in other processes drop their cached integrations on the NOTIFY.
	svc := user.New(d, log, nil)
	app := boot.ServiceApp("user", cfg, log, user.Prefixes, svc.Register,
		map[string]httpx.Check{"postgres": d.Ping})
	log.Info("listening", "addr", cfg.UserAddr)
	if err := boot.Serve(ctx, app, cfg.UserAddr, cfg.ShutdownTimeout); err != nil {
		log.Error("serve", "error", err)
	}
}
