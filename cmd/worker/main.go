// Command worker hosts splathost's Temporal workflows and activities, with /healthz and /readyz
// on SPLATHOST_WORKER_HEALTH_ADDR. The activities reach Postgres, the object store and
// ClickHouse; the worker also runs the view streamer (Postgres outbox → ClickHouse).
package main

import (
	"context"
	"errors"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/temporalconn"
	"github.com/splathost/splathost/internal/worker"
)

func main() {
	rt := boot.Init("worker", false)
	defer rt.Close()
	d := rt.DB()
	store := rt.Store()
	views := rt.Views()
	tc := rt.Temporal()
	rt.ServeHealth(rt.Config.WorkerHealthAddr, map[string]httpx.Check{
		"temporal": temporalconn.Ready(tc), "postgres": d.Ping, "objectstore": store.Ready, "clickhouse": views.Ping,
	}, map[string]httpx.Detail{"clickhouseDDL": worker.ClickHouseDDL(views, rt.Config.ClickHouseDDLStallAfter)})
	// The streamer gets a view store of its own, with its own ClickHouse connections: a purge,
	// the retention job's mutations or a hung DDL on the activities' connections never make
	// accepted views wait in the outbox.
	ingest := rt.Views()
	err := worker.Run(rt.Ctx, tc, rt.Config, worker.Deps{DB: d, Store: store, Views: views,
		Streamer: &analytics.Streamer{Pool: d.Pool, Views: ingest, Log: rt.Log}, Log: rt.Log})
	if err != nil && !errors.Is(err, context.Canceled) {
		boot.Fatal(rt.Log, "worker", err)
	}
}
