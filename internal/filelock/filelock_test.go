package filelock

import (
	"path/filepath"
	"testing"
)

// TestTryLock: a second lock on a held file is refused without waiting, and granted once the
// holder closes it.
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	held, err := TryLock(path, 0o600)
	if err != nil || held == nil {
		t.Fatalf("first lock: %v, %v", held, err)
	}
	if again, err := TryLock(path, 0o600); err != nil || again != nil {
		t.Fatalf("second lock while held: %v, %v (want nil, nil)", again, err)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := TryLock(path, 0o600)
	if err != nil || after == nil {
		t.Fatalf("lock after release: %v, %v", after, err)
	}
	_ = after.Close()
	if _, err := TryLock(filepath.Join(t.TempDir(), "missing", "x.lock"), 0o600); err == nil {
		t.Fatal("a lock in a missing directory: no error")
	}
}
