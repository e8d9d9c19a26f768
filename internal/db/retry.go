package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// retryDriver is ent's SQL driver with one retry for the statements that are safe to repeat:
// a read outside a transaction, and BEGIN. When Postgres restarts, or an operator terminates the
// backends, every idle pooled connection is dead but looks alive until it is used; without the
// retry each of them costs one request a 500. On a connection error the pool is reset first (all
// idle connections closed, the busy ones closed when released), so the retry and the requests
// after it dial fresh connections instead of drawing the next dead one.
//
// Writes are never retried here: a write whose connection died may have committed, and only the
// caller knows whether repeating it is harmless.
type retryDriver struct {
	*entsql.Driver
	pool *pgxpool.Pool
}

// Query runs a statement that returns rows, retrying a read once on a connection error.
func (d retryDriver) Query(ctx context.Context, query string, args, v any) error {
	return once(ctx, d.pool, isPlainRead(query), func() error { return d.Driver.Query(ctx, query, args, v) })
}

// QueryContext is Query for ent's raw-SQL entry point (Client.QueryContext).
func (d retryDriver) QueryContext(ctx context.Context, query string, args ...any) (rows *sql.Rows, err error) {
	err = once(ctx, d.pool, isPlainRead(query), func() error {
		rows, err = d.Driver.QueryContext(ctx, query, args...)
		return err
	})
	return rows, err
}

// Tx starts a transaction, retrying BEGIN once on a connection error: nothing has run yet.
func (d retryDriver) Tx(ctx context.Context) (dialect.Tx, error) {
	return d.BeginTx(ctx, nil)
}

// BeginTx is Tx with options.
func (d retryDriver) BeginTx(ctx context.Context, opts *entsql.TxOptions) (tx dialect.Tx, err error) {
	err = once(ctx, d.pool, true, func() error {
		tx, err = d.Driver.BeginTx(ctx, opts)
		return err
	})
	return tx, err
}

// once runs fn and, when it failed on a connection error and repeatable says a second run is
// harmless, resets the pool and runs it once more.
func once(ctx context.Context, pool *pgxpool.Pool, repeatable bool, fn func() error) error {
	err := fn()
	if err == nil || !repeatable || ctx.Err() != nil || !IsConnError(err) {
		return err
	}
	pool.Reset()
	return fn()
}

// IsConnError reports whether err means the database connection itself failed (closed by the
// server, reset, refused, terminated by an administrator or a restart), as opposed to an error
// of the statement.
func IsConnError(err error) bool {
	if err == nil {
		return false
	}
	if pgconn.SafeToRetry(err) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot
		// connect now (a terminated backend or a restarting server).
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var netErr *net.OpError
	if errors.As(err, &netErr) {
		return true
	}
	// pgx reports a use of a connection it already closed after a fatal error as "conn closed".
	return strings.Contains(err.Error(), "conn closed")
}

// isPlainRead reports whether a statement only reads: a SELECT that locks nothing and calls none
// of the functions with side effects the codebase uses. Anything else (CTEs included, which may
// hide a DELETE) is not retried.
func isPlainRead(query string) bool {
	q := strings.ToLower(strings.TrimLeft(query, " \t\r\n("))
	if !strings.HasPrefix(q, "select") {
		return false
	}
	for _, w := range []string{" for update", " for share", " for no key", " for key share", "nextval(", "setval(", "pg_notify(", "advisory", "pg_terminate_backend("} {
		if strings.Contains(q, w) {
			return false
		}
	}
	return true
}

// ReadRow is pgxpool's QueryRow for a read-only statement on the hot paths that bypass ent: a
// connection error on the first try resets the pool and runs the statement once more (see
// retryDriver). Never use it for a statement that writes.
func (d *DB) ReadRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return readRow{pool: d.Pool, ctx: ctx, sql: sql, args: args}
}

// readRow runs its statement when scanned, like the pgx.Row it stands in for.
type readRow struct {
	pool *pgxpool.Pool
	ctx  context.Context
	sql  string
	args []any
}

// Scan runs the statement and scans its one row into dest, retrying once on a connection error.
func (r readRow) Scan(dest ...any) error {
	return once(r.ctx, r.pool, true, func() error { return r.pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...) })
}
