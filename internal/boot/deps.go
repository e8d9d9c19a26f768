package boot

import (
	"context"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/db"
)

// OpenDB connects to Postgres.
func OpenDB(ctx context.Context, cfg config.Config) (*db.DB, error) {
	return db.Open(ctx, cfg.PostgresURL)
}
