package worker

import (
	"bufio"
	"debug/elf"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// trimAfter are the delays after the worker starts polling at which it trims what it holds
// resident.
var trimAfter = []time.Duration{0, 2 * time.Second, 10 * time.Second, time.Minute}

// trimResident gives back, once the worker has started, what its boot left resident but an
// idle worker does not use. Measured on the split dev stack (issue 16), an idle worker's 52 MiB
// of RSS held 13 MiB of its own memory (9 MiB of live heap, 3.6 MiB of GC metadata, stacks) and
// 38 MiB of its own binary's read-only pages: the kernel maps every page of the file that a
// fault is near (fault-around), so init and boot, which touch code and tables all over the
// 52 MB of loadable segments, leave three quarters of them mapped. Dropping those mappings
// (MADV_DONTNEED on the executable's read-only segments: clean file pages, re-read from the
// page cache on the next touch, so nothing is lost) leaves mapped only what the idle worker
// touches again; debug.FreeOSMemory returns the heap boot garbage the same way.
func trimResident() {
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
