// Package worker connects to Temporal and hosts splathost's workflows and activities. It is its
// own package so that only the binaries that talk to Temporal link the SDK.
package worker

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/workflows"
)

// Run hosts every workflow and activity on the task queue until ctx ends. While nothing is
// registered yet it only keeps its Temporal connection (the SDK refuses to start an empty
// worker).
func Run(ctx context.Context, c client.Client, cfg config.Config, log *slog.Logger) error {
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

// Dial connects a Temporal client. Dial is lazy, so a briefly unavailable frontend does
// not stop a process from starting; readiness reports it instead.
func Dial(cfg config.Config, log *slog.Logger) (client.Client, error) {
	c, err := client.NewLazyClient(client.Options{
		HostPort:  cfg.TemporalAddr,
		Namespace: cfg.TemporalNamespace,
		Logger:    tlog.NewStructuredLogger(log.With("component", "temporal-client")),
	})
	if err != nil {
		return nil, fmt.Errorf("temporal: %w", err)
	}
	return c, nil
}

// Ready checks the Temporal frontend answers.
func Ready(c client.Client) httpx.Check {
	return func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
}
