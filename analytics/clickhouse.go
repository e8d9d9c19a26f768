// Package analytics owns the ClickHouse side of splathost: the schema analysts query, the
// view-event pipeline and the trending queries.
package analytics

import (
	"context"
	"fmt"
	"regexp"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// validDB keeps the database name safe to splice into DDL, which cannot take parameters.
var validDB = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Open connects to ClickHouse over the native protocol and checks the connection. The client is
// pinned to v2.25.0 because later versions cannot insert into ClickHouse 18.16 (DESIGN.md).
func Open(ctx context.Context, addr, db string) (driver.Conn, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr: []string{addr},
		Auth: clickhouse.Auth{Database: db, Username: "default"},
	})
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Migrate creates the analytics database and its tables when missing. Every statement must be
// accepted by ClickHouse 18.16 and by current releases.
func Migrate(ctx context.Context, addr, db string) error {
	if !validDB.MatchString(db) {
		return fmt.Errorf("invalid clickhouse database name %q", db)
	}
	conn, err := Open(ctx, addr, "default")
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db)
}
