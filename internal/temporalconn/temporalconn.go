// Package temporalconn connects a process to the Temporal frontend: the lazy client every binary
// that starts or signals a workflow dials (the services, the workers, the all-in-one process) and
// its readiness check. It is apart from internal/worker so that a service binary dials Temporal
// without linking the worker, the activities or media.
package temporalconn

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
)

// Dial connects a Temporal client. Dial is lazy, so a briefly unavailable frontend does
// not stop a process from starting; readiness reports it instead.
func Dial(cfg config.Config, log *slog.Logger) (client.Client, error) {
	// The tracing interceptor carries the caller's trace into the workflow and its activities
	// (through Temporal headers), so one trace runs from the gateway to the last copy. It is a
	// no-op while tracing is off.
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing: %w", err)
	}
	hostPort, dialOpts := Target(cfg.TemporalAddr)
	c, err := client.NewLazyClient(client.Options{
		HostPort:          hostPort,
		ConnectionOptions: client.ConnectionOptions{DialOptions: dialOpts},
		Namespace:         cfg.TemporalNamespace,
		Logger:            tlog.NewStructuredLogger(log.With("component", "temporal-client")),
		Interceptors:      []interceptor.ClientInterceptor{tracing},
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
