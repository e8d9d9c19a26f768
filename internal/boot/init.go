package boot

import (
	"context"
	"log/slog"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/db"
)

// Runtime is what every binary starts from: its configuration, logger and a context cancelled
// on SIGINT or SIGTERM, with tracing installed.
type Runtime struct {
	Ctx    context.Context
	Config config.Config
	Log    *slog.Logger
	// component names the binary in its logs and its health app.
	component string
	stop      []func()
}

// Init loads the configuration (and, with secrets, insists on the admin token and internal
// secret), installs tracing and the signal context; it exits the process on a bad setup.
func Init(component string, secrets bool) *Runtime {
	cfg, err := config.Load()
	log := Logger(cfg, component)
	if err == nil && secrets {
		err = cfg.RequireSecrets()
	}
	if err != nil {
		Fatal(log, "configuration", err)
	}
	ctx, cancel := SignalContext()
	stopTel, err := Telemetry(ctx, cfg, component)
	if err != nil {
		Fatal(log, "telemetry", err)
	}
	return &Runtime{Ctx: ctx, Config: cfg, Log: log, component: component, stop: []func(){cancel, func() { _ = stopTel(context.Background()) }}}
}

// DB opens Postgres or exits; Close releases it.
func (r *Runtime) DB() *db.DB {
	d, err := OpenDB(r.Ctx, r.Config, r.Log)
	if err != nil {
		Fatal(r.Log, "postgres", err)
	}
	r.stop = append(r.stop, d.Close)
	return d
}

// Views opens the ClickHouse view store or exits; Close releases it.
func (r *Runtime) Views() *analytics.Views {
	v, err := analytics.OpenViews(r.Ctx, r.Config.ClickHouseAddr, r.Config.ClickHouseDB)
	if err != nil {
		Fatal(r.Log, "clickhouse", err)
	}
	r.stop = append(r.stop, func() { _ = v.Close() })
	return v
}

// Close releases everything Init, DB and Views opened, last opened first.
func (r *Runtime) Close() {
	for i := len(r.stop) - 1; i >= 0; i-- {
		r.stop[i]()
	}
}
