package boot

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/temporalconn"
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

// Store opens the object store or exits.
func (r *Runtime) Store() *objectstore.Store {
	s, err := objectstore.New(r.Config)
	if err != nil {
		Fatal(r.Log, "object store", err)
	}
	return s
}

// Temporal dials Temporal (lazily: a server that is down only fails the calls) or exits on a
// bad address; Close closes the client.
func (r *Runtime) Temporal() client.Client {
	tc, err := temporalconn.Dial(r.Config, r.Log)
	if err != nil {
		Fatal(r.Log, "temporal", err)
	}
	r.stop = append(r.stop, tc.Close)
	return tc
}

// Close releases everything Init, DB, Views and Temporal opened, last opened first.
func (r *Runtime) Close() {
	for i := len(r.stop) - 1; i >= 0; i-- {
		r.stop[i]()
	}
}
