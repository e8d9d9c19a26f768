//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/migrate"
)

func TestMigrationsAreIdempotent(t *testing.T) {
	n, err := migrate.Postgres(context.Background(), env.Config.PostgresURL)
	require.NoError(t, err)
	require.Zero(t, n, "the harness already applied every migration")
}

// TestEntSchemaHasNoDriftFromMigrations replays the committed migrations on a scratch database
// and asks ent what it would still change: a schema edit without `make migration` fails here.
func TestEntSchemaHasNoDriftFromMigrations(t *testing.T) {
	ctx := context.Background()
	_, err := env.Process.DB.Pool.Exec(ctx, "DROP DATABASE IF EXISTS drift_check")
	require.NoError(t, err)
	_, err = env.Process.DB.Pool.Exec(ctx, "CREATE DATABASE drift_check")
	require.NoError(t, err)
	url := strings.Replace(env.Config.PostgresURL, "/splathost?", "/drift_check?", 1)
	sqlDB, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer sqlDB.Close()
	client := ent.NewClient(ent.Driver(entsql.OpenDB(dialect.Postgres, sqlDB)))

	// Control: on the empty database the check does see the whole schema as missing.
	require.NotEmpty(t, pendingChanges(t, client))
	_, err = migrate.Postgres(ctx, url)
	require.NoError(t, err)
	require.Empty(t, pendingChanges(t, client), "ent schema differs from the committed migrations; run `make migration NAME=...`")
}

// pendingChanges lists the statements ent would run to bring the database to its schema.
func pendingChanges(t *testing.T, client *ent.Client) []string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, client.Schema.WriteTo(context.Background(), &buf))
	var changes []string
	for _, line := range strings.Split(buf.String(), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "BEGIN;" && line != "COMMIT;" && !strings.HasPrefix(line, "--") {
			changes = append(changes, line)
		}
	}
	return changes
}
