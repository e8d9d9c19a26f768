// Package resident gives back, once a process has started and gone idle, the memory its boot
// left resident that an idle process does not use (issue 16's idle-RSS goals). Every binary
// calls AfterStart once it serves or polls.
package resident

import (
	"bufio"
	"debug/elf"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// trimAfter are the delays after a process starts serving (or polling) at which it trims what it
// holds resident. Boot goes on for a few seconds after that point (a worker's schedules and
// first polls, a service's first health checks and cache fills) and maps pages of the binary
// again; trimming at each of these points leaves an idle process at what it touches while idle.
var trimAfter = []time.Duration{0, 2 * time.Second, 5 * time.Second, 10 * time.Second, time.Minute}

// scheduled says whether trims are scheduled: they are per process, and the all-in-one process
// starts the HTTP server, the worker and the media worker, each of which calls AfterStart.
var (
	mu        sync.Mutex
	scheduled bool
)

// AfterStart trims now and at each of trimAfter's delays, unless another part of the process has
// already scheduled them (then it does nothing and its stop is a no-op); stop cancels the trims
// still to come.
func AfterStart() (stop func()) {
	mu.Lock()
	defer mu.Unlock()
	if scheduled {
		return func() {}
	}
	scheduled = true
	timers := make([]*time.Timer, 0, len(trimAfter))
	for _, d := range trimAfter {
		timers = append(timers, time.AfterFunc(d, Trim))
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		for _, t := range timers {
			t.Stop()
		}
		scheduled = false
	}
}

// Trim gives back what the process's boot left resident but an idle process does not use.
// Measured on the split dev stack (issue 16), an idle worker's 52 MiB of RSS held 13 MiB of its
// own memory (9 MiB of live heap, 3.6 MiB of GC metadata, stacks) and 38 MiB of its own binary's read-only pages: the kernel maps every page of the file that a
// fault is near (fault-around), so init and boot, which touch code and tables all over the
// 52 MB of loadable segments, leave three quarters of them mapped. Dropping those mappings
// (MADV_DONTNEED on the executable's read-only segments: clean file pages, re-read from the
// page cache on the next touch, so nothing is lost) leaves mapped only what the idle worker
// touches again; debug.FreeOSMemory returns the heap boot garbage the same way.
func Trim() {
	debug.FreeOSMemory()
	exe, err := os.Executable()
	if err != nil || hasRelro(exe) {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return // not Linux: nothing to trim
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue // only the binary's own read-only segments: writable ones hold data
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		// A failure leaves the pages mapped, which is only memory.
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_DONTNEED)
	}
}

// hasRelro reports whether the binary has a RELRO segment (or cannot be read): pages the
// dynamic loader wrote relocations into and then made read-only. Dropping those would bring back
// the file's unrelocated bytes, so such a binary (external linking) is not trimmed at all; Go's
// own linker, as `make build` uses it, keeps its relocated GOT writable and emits none.
func hasRelro(exe string) bool {
	f, err := elf.Open(exe)
	if err != nil {
		return true
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_RELRO {
			return true
		}
	}
	return false
}
