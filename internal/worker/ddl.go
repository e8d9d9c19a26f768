package worker

import (
	"context"
	"time"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/metrics"
)

// ClickHouseDDL watches the ClickHouse cluster under views for nodes whose distributed DDL
// queue has stopped (analytics.DDLWatch: a task queued more than after ago that a node has not
// finished). It exports the count as splathost_clickhouse_ddl_stalled_hosts and returns the
// /readyz detail that names them. The detail never fails the worker's readiness: a stalled
// ClickHouse node is mended by restarting that node (deploy/README.md), not this process, and
// views keep flowing meanwhile (the streamer's inserts need no DDL). On one server both report
// none.
func ClickHouseDDL(views *analytics.Views, after time.Duration) httpx.Detail {
	w := &analytics.DDLWatch{Views: views, After: after}
	metrics.Gauge("splathost_clickhouse_ddl_stalled_hosts",
		"ClickHouse nodes whose distributed DDL queue has stopped: an ON CLUSTER task queued for them longer ago than SPLATHOST_CLICKHOUSE_DDL_STALL_AFTER is unfinished (0 on one server).",
		func() (float64, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			stalls, err := w.Stalls(ctx)
			return float64(len(stalls)), err
		})
	return func(ctx context.Context) (any, error) {
		stalls, err := w.Stalls(ctx)
		if err != nil {
			return nil, err
		}
		if stalls == nil {
			stalls = []analytics.DDLStall{} // an empty list reads as "none", not as unknown
		}
		return map[string]any{"stalledHosts": stalls, "stallAfter": after.String()}, nil
	}
}
