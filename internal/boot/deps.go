package boot

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/objectstore"
)

// OpenDB connects to Postgres.
func OpenDB(ctx context.Context, cfg config.Config) (*db.DB, error) {
	return db.Open(ctx, cfg.PostgresURL)
}

// OpenStore builds the object store client.
func OpenStore(cfg config.Config) (*objectstore.Store, error) { return objectstore.New(cfg) }

// OpenClickHouse connects to the analytics database.
func OpenClickHouse(ctx context.Context, cfg config.Config) (driver.Conn, error) {
	conn, err := analytics.Open(ctx, cfg.ClickHouseAddr, cfg.ClickHouseDB)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: %w", err)
	}
	return conn, nil
}

// DialTemporal connects a Temporal client. Dial is lazy, so a briefly unavailable frontend does
// not stop a process from starting; readiness reports it instead.
func DialTemporal(cfg config.Config, log *slog.Logger) (client.Client, error) {
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

// TemporalReady checks the Temporal frontend answers.
func TemporalReady(c client.Client) httpx.Check {
	return func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
}
