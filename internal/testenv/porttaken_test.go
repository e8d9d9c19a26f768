package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPortTakenReadsTheStackLogs(t *testing.T) {
	dir := t.TempDir()
	crash := errors.New("stack runner exited before it was ready (exit status 2)")
	if portTaken(dir, crash) {
		t.Fatal("a crash with no bind failure in any log is not a lost port")
	}
	if !portTaken(dir, errors.New("listen tcp 127.0.0.1:4000: bind: address already in use")) {
		t.Fatal("the runner's own bind error is a lost port")
	}
	// Temporal logs its failed listen in its own log and crashes later.
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	line := `{"level":"ERROR","msg":"Failed to start gRPC listener","error":"listen tcp 127.0.0.1:41234: bind: address already in use"}`
	if err := os.WriteFile(filepath.Join(dir, "logs", "temporal.log"), []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !portTaken(dir, crash) {
		t.Fatal("Temporal's bind failure in logs/temporal.log is a lost port")
	}
}
