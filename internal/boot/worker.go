package boot

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/workflows"
)

// RunWorker hosts every workflow and activity on the task queue until ctx ends. While nothing is
// registered yet it only keeps its Temporal connection (the SDK refuses to start an empty
// worker).
func RunWorker(ctx context.Context, c client.Client, cfg config.Config, log *slog.Logger) error {
	w := worker.New(c, cfg.TaskQueue, worker.Options{})
	n := workflows.Register(w) + activities.Register(w)
	if n == 0 {
		log.Info("no workflows or activities registered; worker idle", "taskQueue", cfg.TaskQueue)
		<-ctx.Done()
		return nil
	}
	if err := w.Start(); err != nil {
		return err
	}
	log.Info("worker polling", "taskQueue", cfg.TaskQueue, "registered", n)
	<-ctx.Done()
	w.Stop()
	return nil
}
