//go:build ignore

// Command gen writes a new versioned migration: the difference between the committed
// migrations, replayed on a scratch Postgres database, and the current ent schema.
//
//	go run internal/migrate/gen/main.go -dev 'postgres://postgres@127.0.0.1:PORT/scratch?sslmode=disable' NAME
package main

import (
	"context"
	"database/sql"
	"flag"
	"log"

	atlas "ariga.io/atlas/sql/migrate"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql/schema"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/splathost/splathost/ent/migrate"
)

func main() {
	// Atlas opens the dev database by the driver name "postgres"; serve it with pgx.
	sql.Register("postgres", stdlib.GetDefaultDriver())
	dev := flag.String("dev", "", "URL of an empty scratch Postgres database")
	dirPath := flag.String("dir", "ent/migrate/migrations", "migration directory")
	flag.Parse()
	if *dev == "" || flag.NArg() != 1 {
		log.Fatal("usage: gen -dev URL NAME")
	}
	dir, err := atlas.NewLocalDir(*dirPath)
	if err != nil {
		log.Fatal(err)
	}
	opts := []schema.MigrateOption{
		schema.WithDir(dir),
		schema.WithMigrationMode(schema.ModeReplay),
		schema.WithDialect(dialect.Postgres),
		schema.WithFormatter(atlas.DefaultFormatter),
	}
	if err := migrate.NamedDiff(context.Background(), *dev, flag.Arg(0), opts...); err != nil {
		log.Fatalf("diff: %v", err)
	}
}
