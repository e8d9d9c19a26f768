// Package migrate applies every schema the product owns: the versioned Postgres migrations
// generated from the ent schema and the ClickHouse analytics schema.
package migrate

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"

	atlas "ariga.io/atlas/sql/migrate"
	"github.com/jackc/pgx/v5"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/ent/migrate/migrations"
	"github.com/splathost/splathost/internal/config"
)

// lockKey is the advisory lock that serializes migrators started at the same time (several
// replicas booting together); its value is arbitrary but fixed forever.
const lockKey = 7_305_118_302

// Run applies all pending migrations. It is safe to call concurrently and repeatedly.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	n, err := Postgres(ctx, cfg.PostgresURL)
	if err != nil {
		return err
	}
	log.Info("postgres migrations applied", "new", n)
	if err := analytics.Migrate(ctx, cfg.ClickHouseAddr, cfg.ClickHouseDB, cfg.ClickHouseCluster); err != nil {
		return fmt.Errorf("clickhouse schema: %w", err)
	}
	return nil
}

// Postgres applies the embedded migrations not yet recorded in schema_migrations, each in its
// own transaction, and returns how many it applied. It refuses to run when atlas.sum does not
// match the files, which catches a migration edited after it shipped.
func Postgres(ctx context.Context, url string) (int, error) {
	files, err := load(migrations.FS)
	if err != nil {
		return 0, err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return 0, fmt.Errorf("migration lock: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", lockKey) //nolint:errcheck // the session ends right after
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	applied := map[string]bool{}
	rows, err := conn.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return 0, err
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		if applied[f.Version()] {
			continue
		}
		stmts, err := f.Stmts()
		if err != nil {
			return n, fmt.Errorf("parse %s: %w", f.Name(), err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, s := range stmts {
				if _, err := tx.Exec(ctx, s); err != nil {
					return fmt.Errorf("%s: %w", f.Name(), err)
				}
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", f.Version())
			return err
		})
		if err != nil {
			return n, fmt.Errorf("apply migration: %w", err)
		}
		n++
	}
	return n, nil
}

// load reads a migration directory into an atlas directory and validates its checksum.
func load(src fs.FS) ([]atlas.File, error) {
	dir := &atlas.MemDir{}
	entries, err := fs.ReadDir(src, ".")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".sql") && name != atlas.HashFileName {
			continue
		}
		b, err := fs.ReadFile(src, name)
		if err != nil {
			return nil, err
		}
		if err := dir.WriteFile(name, b); err != nil {
			return nil, err
		}
	}
	if err := atlas.Validate(dir); err != nil {
		return nil, fmt.Errorf("migration directory does not match atlas.sum: %w", err)
	}
	return dir.Files()
}
