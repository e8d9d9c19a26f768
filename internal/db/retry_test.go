package db

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

func TestIsConnError(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"terminated backend", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true},
		{"wrapped terminated backend", fmt.Errorf("scene: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"connection exception class", &pgconn.PgError{Code: "08006"}, true},
		{"eof", io.EOF, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"plain error", errors.New("no rows"), false},
		{"nil", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) { require.Equal(t, tt.want, IsConnError(tt.err)) })
	}
}

func TestIsPlainRead(t *testing.T) {
	for q, want := range map[string]bool{
		`SELECT "scenes"."id" FROM "scenes" WHERE "scenes"."id" = $1`: true,
		"  (select 1)": true,
		`SELECT "id" FROM "scenes" WHERE id = $1 FOR UPDATE`:           false,
		"SELECT pg_notify('scenes', $1)":                               false,
		"SELECT nextval('seq')":                                        false,
		"WITH gone AS (DELETE FROM t RETURNING id) SELECT * FROM gone": false,
		`INSERT INTO "scenes" ("id") VALUES ($1) RETURNING "id"`:       false,
		`UPDATE "scenes" SET "title" = $1`:                             false,
	} {
		require.Equal(t, want, isPlainRead(q), q)
	}
}
