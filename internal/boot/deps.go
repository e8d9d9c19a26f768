package boot

import (
	"context"
	"log/slog"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/db"
)

// OpenDB connects to Postgres, and to its hot standby when SPLATHOST_POSTGRES_READ_URL names
// one (the reads that promise no read-your-writes go there; docs/operations.md).
func OpenDB(ctx context.Context, cfg config.Config, log *slog.Logger) (*db.DB, error) {
	d, err := db.Open(ctx, cfg.PostgresURL)
	if err != nil || cfg.PostgresReadURL == "" {
		return d, err
	}
	if err := d.UseStandby(ctx, cfg.PostgresReadURL, cfg.PostgresReadMaxLag, log); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}
