package stackstate

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// The cluster shape's product URL names both servers and asks for the writable one; pgx reads
// it as the primary first with the standby as its fallback.
func TestFailoverURL(t *testing.T) {
	got := FailoverURL("postgres://postgres@127.0.0.1:5001/splathost?sslmode=disable",
		"postgres://postgres@127.0.0.1:5002/splathost?sslmode=disable")
	want := "postgres://postgres@127.0.0.1:5001,127.0.0.1:5002/splathost?sslmode=disable&target_session_attrs=read-write"
	if got != want {
		t.Fatalf("FailoverURL = %s, want %s", got, want)
	}
	cfg, err := pgconn.ParseConfig(got)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 5001 || len(cfg.Fallbacks) != 1 || cfg.Fallbacks[0].Port != 5002 || cfg.ValidateConnect == nil {
		t.Fatalf("pgx reads %d with fallbacks %+v, validate %v", cfg.Port, cfg.Fallbacks, cfg.ValidateConnect != nil)
	}
	cfg2 := State{PostgresURL: "postgres://postgres@127.0.0.1:5001/splathost?sslmode=disable"}.Config()
	if cfg2.PostgresURL != "postgres://postgres@127.0.0.1:5001/splathost?sslmode=disable" {
		t.Fatalf("a single-node stack's URL changed: %s", cfg2.PostgresURL)
	}
}
