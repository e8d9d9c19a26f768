// Package db opens the product database: one pgx pool shared by ent (through database/sql) and
// by the few hot paths and LISTEN loops that use pgx directly.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/netx"
)

// DB is the product database handle.
type DB struct {
	Pool *pgxpool.Pool
	Ent  *ent.Client
	// Read is the client of the reads that promise no read-your-writes (docs/operations.md):
	// the hot standby's while one is configured and fresh (UseStandby), else the same as Ent.
	// Everything an integrator may read right after writing it uses Ent.
	Read    *ent.Client
	standby *standby
	// primary is Ent's driver, which the standby's falls back to.
	primary dialect.Driver
}

// Open connects and checks the connection.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres url: %w", err)
	}
	pool, drv, err := openPool(ctx, cfg)
	if err != nil {
		return nil, err
	}
	client := ent.NewClient(ent.Driver(drv))
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres ping: %w", err)
	}
	return &DB{Pool: pool, Ent: client, Read: client, primary: drv}, nil
}

// openPool makes the pgx pool of cfg and ent's driver over it, without connecting yet.
func openPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, retryDriver, error) {
	if cfg.MaxConns < 16 {
		// Every request is a short query; a pool sized by CPU count (pgx's default) would queue
		// requests on a two-core machine while Postgres sits idle.
		cfg.MaxConns = 16
	}
	// A connection whose backend was terminated (a Postgres restart, pg_terminate_backend, an
	// idle timeout) is dropped when it is drawn, not handed to a query that would fail with it.
	cfg.PrepareConn = func(_ context.Context, c *pgx.Conn) (bool, error) {
		return !netx.IdleBroken(c.PgConn().Conn()), nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, retryDriver{}, fmt.Errorf("postgres pool: %w", err)
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	// An idle database/sql connection keeps its pgx connection acquired, starving the pgx users
	// of the same pool (authentication, LISTEN); let pgxpool alone keep idle connections.
	sqlDB.SetMaxIdleConns(0)
	// Reads and BEGIN survive one dead pooled connection (retry.go).
	return pool, retryDriver{Driver: entsql.OpenDB(dialect.Postgres, sqlDB), pool: pool}, nil
}

// Close releases every connection.
func (d *DB) Close() {
	if d.standby != nil {
		d.standby.close()
	}
	_ = d.Ent.Close()
	d.Pool.Close()
}

// Ping checks the database answers.
func (d *DB) Ping(ctx context.Context) error {
	// A pooled connection whose backend was terminated fails its ping and is dropped by the
	// pool; that is one dead connection, not the store down, so a second ping (on another or
	// a new connection) decides. Readiness must not flap on it.
	err := d.Pool.Ping(ctx)
	if err != nil && ctx.Err() == nil {
		err = d.Pool.Ping(ctx)
	}
	return err
}

// InTx runs fn in a transaction and commits it when fn succeeds. An *apperr.Error from fn is
// returned unchanged (it is the answer to the client); anything else becomes a 500.
func (d *DB) InTx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := d.Ent.Tx(ctx)
	if err != nil {
		return apperr.Internal(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return apperr.From(err)
	}
	if err := tx.Commit(); err != nil {
		return commitFailure(ctx, err)
	}
	return nil
}

// commitFailure is the answer to a failed COMMIT. When the request's context ended first,
// database/sql rolled the transaction back without sending the commit: nothing changed (a 503
// through the error mapper). When the connection broke with the commit sent, Postgres may have
// applied it: the outcome is unknown and the answer says so; a keyed request's retry learns it
// from the answer its transaction recorded (package idempotency).
func commitFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, sql.ErrTxDone) || errors.Is(err, ctx.Err())) {
		return apperr.Unavailable(err)
	}
	if IsConnError(err) {
		return apperr.OutcomeUnknown(err)
	}
	return apperr.Internal(err)
}
