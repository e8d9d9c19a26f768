// Package analytics owns the ClickHouse side of splathost: the schema analysts query, the
// view-event pipeline and the trending queries.
package analytics

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/splathost/splathost/internal/config"
)

// validDB keeps a database or cluster name safe to splice into DDL, which cannot take
// parameters.
var validDB = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Open connects to ClickHouse over the native protocol and checks the connection. The client is
// pinned to v2.25.0 because later versions cannot insert into ClickHouse 18.16 (DESIGN.md).
//
// addr is one host:port or a comma-separated list of them (SPLATHOST_CLICKHOUSE_ADDR: the nodes
// of a cluster). Every new connection dials them in order and takes the first that answers, so
// a node that is down costs a refused dial (at most DialTimeout when it hangs), not an outage:
// any node serves every query and insert through the Distributed tables.
func Open(ctx context.Context, addr, db string) (driver.Conn, error) {
	addrs := config.List(addr)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no clickhouse address in %q", addr)
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:             addrs,
		ConnOpenStrategy: clickhouse.ConnOpenInOrder,
		Auth:             clickhouse.Auth{Database: db, Username: "default"},
		// A ClickHouse that stops answering must fail a call in bounded time, so the view
		// streamer retries instead of hanging (the Postgres outbox keeps the views meanwhile).
		DialTimeout: 5 * time.Second,
		ReadTimeout: 30 * time.Second,
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

// Migrate creates the analytics database and applies every schema version not yet recorded in
// its schema_migrations table, in order. With cluster set (SPLATHOST_CLICKHOUSE_CLUSTER) it
// creates the cluster variant: every statement ON CLUSTER, Replicated tables on every shard and
// Distributed tables over them (deploy/README.md). Every statement is idempotent (IF NOT
// EXISTS), so two migrators racing, or a crash between a statement and its record, are
// harmless. Every statement must be accepted by ClickHouse 18.16 and by current releases.
func Migrate(ctx context.Context, addr, db, cluster string) error {
	if !validDB.MatchString(db) {
		return fmt.Errorf("invalid clickhouse database name %q", db)
	}
	if cluster != "" && !validDB.MatchString(cluster) {
		return fmt.Errorf("invalid clickhouse cluster name %q", cluster)
	}
	l := layout{db: db, cluster: cluster}
	conn, err := Open(ctx, addr, "default")
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db+l.onCluster()); err != nil {
		return err
	}
	if err := conn.Exec(ctx, migrationsDDL(l)); err != nil {
		return err
	}
	applied := map[uint32]bool{}
	rows, err := conn.Query(ctx, "SELECT version FROM "+db+"."+migrationsTable)
	if err != nil {
		return err
	}
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.statements(l) {
			if err := conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("clickhouse schema version %d (%s): %w", m.version, m.name, err)
			}
		}
		// INSERT … SELECT: an INSERT … VALUES through Exec waits for a data block that 18.16
		// never asks for with this client.
		if err := conn.Exec(ctx, "INSERT INTO "+db+"."+migrationsTable+" (version, applied_at) SELECT toUInt32(?), now()", m.version); err != nil {
			return err
		}
	}
	return nil
}
