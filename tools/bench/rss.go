package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/splathost/splathost/internal/testenv"
)

// memoryPhase runs only the idle memory measure (-memory-only): a split stack on a fresh
// directory, read after it idled, as the full run's first phase reads it.
func (r *runner) memoryPhase(ctx context.Context, ready *Row) []Row {
	var rows []Row
	if !r.phase(ctx, "split", ready, func(st *testenv.Stack) { rows = r.memoryRows(ctx, st, "split") }) {
		return []Row{{Name: "idle RSS (split)", Unit: "MiB", Goal: GoalStackRSS, Err: ready.Err}}
	}
	return rows
}

// Memory is the resident memory of one stack process, with its descendants when they belong to
// it (Postgres serves each connection from a forked backend).
type Memory struct {
	// RSSKiB is the sum of VmRSS over the process and its counted descendants.
	RSSKiB int64
	// PSSKiB is the proportional set size over the same processes: shared pages are split
	// between the processes sharing them, so unlike RSS it does not count Postgres's shared
	// buffers once per backend. Zero when /proc/PID/smaps_rollup cannot be read.
	PSSKiB int64
	// Processes is how many processes were summed.
	Processes int
}

// ReadMemory measures pid, and with children set also every descendant of pid.
func ReadMemory(pid int, children bool) (Memory, error) {
	pids := []int{pid}
	if children {
		pids = append(pids, descendants(pid)...)
	}
	var m Memory
	for i, p := range pids {
		rss, err := procStatusKiB(p, "VmRSS")
		if err != nil {
			if i == 0 {
				return Memory{}, err
			}
			continue // a backend that exited between listing and reading
		}
		m.RSSKiB += rss
		m.Processes++
		if pss, err := smapsRollupKiB(p, "Pss"); err == nil {
			m.PSSKiB += pss
		}
	}
	return m, nil
}

// descendants lists every process below pid, read from /proc/PID/task/*/children.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// procStatusKiB reads a "Key:   N kB" line of /proc/PID/status.
func procStatusKiB(pid int, key string) (int64, error) {
	return kibField(fmt.Sprintf("/proc/%d/status", pid), key)
}

// smapsRollupKiB reads a "Key:   N kB" line of /proc/PID/smaps_rollup.
func smapsRollupKiB(pid int, key string) (int64, error) {
	return kibField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), key)
}

func kibField(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			break
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %s line", path, key)
}
