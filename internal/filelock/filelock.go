// Package filelock takes exclusive advisory locks on files (flock), which the kernel releases
// when the holding process dies, however it dies: the stack runner's data directory and each
// media worker's scratch directory are claimed this way.
package filelock

import (
	"errors"
	"os"
	"syscall"
)

// TryLock opens path (creating it with perm) and takes an exclusive lock on it without waiting.
// It returns the open file, which holds the lock until it is closed or the process ends, or nil
// when another open file (of this process or another) holds the lock.
func TryLock(path string, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, err
	}
	return f, nil
}
