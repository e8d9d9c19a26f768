// Command splathost runs the whole product in one process: the gateway with the user, scene and
// session services mounted in-process, and the Temporal worker. `splathost migrate` applies the
// Postgres migrations and the ClickHouse schema, then exits.
package main

import (
	"context"
	"os"

	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/migrate"
)

func main() {
	cfg, err := config.Load()
	log := boot.Logger(cfg, "splathost")
	if err != nil {
		boot.Fatal(log, "configuration", err)
	}
	ctx, cancel := boot.SignalContext()
	defer cancel()
	if len(os.Args) > 1 {
		if os.Args[1] != "migrate" {
			log.Error("unknown subcommand; the only one is migrate", "arg", os.Args[1])
			os.Exit(2)
		}
		if err := migrate.Run(ctx, cfg, log); err != nil {
			boot.Fatal(log, "migrate", err)
		}
		return
	}
	stopTel, err := boot.Telemetry(ctx, cfg, "splathost")
	if err != nil {
		boot.Fatal(log, "telemetry", err)
	}
	defer stopTel(context.Background())
	p, err := boot.AllInOne(ctx, cfg, log)
	if err != nil {
		boot.Fatal(log, "start", err)
	}
	defer p.Close()
	log.Info("listening", "addr", cfg.GatewayAddr)
	if err := boot.Serve(ctx, p.App, cfg.GatewayAddr, cfg.ShutdownTimeout); err != nil {
		log.Error("serve", "error", err)
	}
}
