package worker

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/splathost/splathost/internal/filelock"
)

// workLock is the file a media worker holds an exclusive flock on for as long as it runs: the
// kernel drops the lock when the process dies, however it dies.
const workLock = ".lock"

// claimWorkDir gives a media worker its own directory for conversions under root, locked for
// the process's life, after removing what dead workers left there: a conversion's directory
// holds the download, the converter's output and the decimated levels (gigabytes for a large
// scene), and a worker killed mid-conversion (kill -9, OOM, power) never removes its own. Other
// live workers' directories on the same machine are left alone: their locks are held. Loose
// directories of workers older than per-process directories are removed once older than
// staleAfter (the longest a conversion may run). release unlocks and removes the directory.
func claimWorkDir(root string, staleAfter time.Duration, log *slog.Logger) (dir string, release func(), err error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", nil, err
	}
	sweepWorkDirs(root, staleAfter, log)
	// Locked under a name sweeps leave alone (a loose directory younger than staleAfter), then
	// renamed to a worker- name: a worker starting beside this one never finds an unlocked
	// worker- directory that is not a dead worker's.
	claim, err := os.MkdirTemp(root, "claim-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", nil, err
	}
	lock, err := lockDir(claim)
	if err == nil && lock == nil {
		err = fmt.Errorf("work directory %s: locked by another process as it was created", claim)
	}
	if err != nil {
		_ = os.RemoveAll(claim)
		return "", nil, err
	}
	dir = filepath.Join(root, "worker-"+strings.TrimPrefix(filepath.Base(claim), "claim-"))
	if err := os.Rename(claim, dir); err != nil {
		_ = os.RemoveAll(claim)
		_ = lock.Close()
		return "", nil, err
	}
	return dir, func() {
		_ = os.RemoveAll(dir)
		_ = lock.Close()
	}, nil
}

// lockDir takes dir's work lock without waiting: the open lock file (keep it open to hold the
// lock), or nil when another process holds it.
func lockDir(dir string) (*os.File, error) {
	return filelock.TryLock(filepath.Join(dir, workLock), 0o600)
}

// sweepWorkDirs removes the worker directories under root whose lock no process holds, and
// loose conversion directories older than staleAfter. Failures are logged, never fatal: a
// leftover costs disk, not correctness.
func sweepWorkDirs(root string, staleAfter time.Duration, log *slog.Logger) {
	entries, err := os.ReadDir(root)
	if err != nil {
		log.Warn("media work directory: cannot list it for leftovers", "dir", root, "error", err)
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(root, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), "worker-"):
			lock, err := lockDir(path)
			if err != nil || lock == nil {
				continue // a live worker's, or one we cannot judge
			}
			err = os.RemoveAll(path)
			_ = lock.Close()
			logRemoved(log, path, "its worker is gone", err)
		default:
			info, err := e.Info()
			if err != nil || time.Since(info.ModTime()) < staleAfter {
				continue
			}
			logRemoved(log, path, "older than the longest conversion", os.RemoveAll(path))
		}
	}
}

func logRemoved(log *slog.Logger, path, why string, err error) {
	if err != nil {
		log.Warn("media work directory: could not remove a leftover", "dir", path, "why", why, "error", err)
		return
	}
	log.Info("media work directory: removed a leftover", "dir", path, "why", why)
}
