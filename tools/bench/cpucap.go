package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupRoot is where the kernel's cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// capProcesses puts each named process into a cgroup of its own whose CPU quota is cores, so
// it can use that much CPU time and no more, whatever the machine's other processes do; release
// moves them back to their own cgroups and removes the new ones. It needs root and the cgroup
// CPU controller (v1's cpu hierarchy, or v2's cpu.max).
func capProcesses(pids map[string]int, names []string, cores float64) (release func() error, err error) {
	var undo []func() error
	release = func() error {
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			errs = append(errs, undo[i]())
		}
		return errors.Join(errs...)
	}
	for _, name := range names {
		pid, ok := pids[name]
		if !ok {
			return release, errors.Join(fmt.Errorf("no process %s", name), release())
		}
		u, err := capProcess(name, pid, cores)
		if err != nil {
			return release, errors.Join(err, release())
		}
		undo = append(undo, u)
	}
	return release, nil
}

// capProcess caps one process (capProcesses).
func capProcess(name string, pid int, cores float64) (func() error, error) {
	const period = 100_000 // µs, the kernel's default CFS period
	quota := strconv.Itoa(int(cores * period))
	hier, limit := filepath.Join(cgroupRoot, "cpu"), func(dir string) error {
		if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(period)), 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(quota), 0o644)
	}
	controller := "cpu"
	if _, err := os.Stat(filepath.Join(hier, "cpu.cfs_quota_us")); err != nil {
		// cgroup v2: one hierarchy, the limit is cpu.max.
		hier, controller = cgroupRoot, ""
		limit = func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(quota+" "+strconv.Itoa(period)), 0o644)
		}
	}
	from, err := cgroupOf(pid, controller)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(hier, fmt.Sprintf("splathost-bench-%d-%s", os.Getpid(), name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup for %s: %w", name, err)
	}
	move := func(to string) error {
		return os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	}
	undo := func() error {
		err := move(filepath.Join(hier, from))
		if errors.Is(err, os.ErrNotExist) {
			err = nil // the process is gone
		}
		return errors.Join(err, os.Remove(dir))
	}
	if err := limit(dir); err != nil {
		return nil, errors.Join(fmt.Errorf("cgroup quota for %s: %w", name, err), os.Remove(dir))
	}
	if err := move(dir); err != nil {
		return nil, errors.Join(fmt.Errorf("move %s into its cgroup: %w", name, err), os.Remove(dir))
	}
	return undo, nil
}

// cgroupOf is the cgroup path of pid in the hierarchy of controller (v1), or in the unified
// hierarchy when controller is empty, from /proc/PID/cgroup.
func cgroupOf(pid int, controller string) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[1] == "" {
			return parts[2], nil
		}
		for _, c := range strings.Split(parts[1], ",") {
			if controller != "" && c == controller {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("pid %d: no %q cgroup in /proc/%d/cgroup", pid, controller, pid)
}
