package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/spawn"
)

// StackOptions says how to start one stack runner.
type StackOptions struct {
	// Dir is the stack's data directory; the postgres user must be able to reach it. A second
	// stack on the same Dir is a warm restart.
	Dir string
	// Services is the runner's --services: "none" (infrastructure only), "split" or
	// "allinone"; empty leaves the runner's default.
	Services string
	// BinDir holds the product binaries the runner starts (--bin); empty leaves the default.
	BinDir string
	// Demo also runs the demo host page (--demo), as `make dev` does.
	Demo bool
	// Replicas runs that many processes of each product binary with Services "split"
	// (--replicas), every gateway forwarding to every replica; State.GatewayURLs lists every
	// gateway.
	Replicas int
	// Gateways and Sessions run that many gateway and session service processes with
	// Services "split" (--gateways, --sessions; 1 when zero); State.GatewayURLs lists every
	// gateway.
	Gateways, Sessions int
	// Cluster runs the runner's cluster shape (--cluster): a Postgres standby, ClickHouse as
	// 2 shards x 2 replicas on ZooKeeper, two versitygw gateways. The engine names of
	// EnginePostgres, EngineClickHouse and EngineVersityGW then name the nodes the product uses.
	Cluster bool
	// Runner is the stack runner binary; StackBinary() when empty.
	Runner string
	// ReadyTimeout bounds the wait for the state file; 3 minutes when zero.
	ReadyTimeout time.Duration
	// StopTimeout is how long Stop waits for the runner before it kills it; 30 s when zero.
	StopTimeout time.Duration
	// Env is added to the runner's environment (KEY=value, later entries winning), which the
	// product processes inherit: a SPLATHOST_* tuning knob for this stack only.
	Env []string
}

// Stack is a running stack runner.
type Stack struct {
	// State is what the runner wrote once everything was healthy.
	State State
	// LogPath is the runner's own log.
	LogPath string

	proc        *spawn.Proc
	stopTimeout time.Duration
	stateFile   string
	// runner is the runner binary, which also sends its commands (RunnerCommand).
	runner string
}

// StartStack runs `stack --dir DIR --random-ports --state-file DIR/stack.json [--services S]
// [--bin B]` and waits until the runner has written a valid state file.
//
// The runner sits in its own process group, so a terminal Ctrl-C reaches only the caller: were
// it to reach the runner too, the caller's own stop would be the runner's second signal, which
// makes it exit at once without stopping Postgres and the rest in order. If the caller dies, the
// runner gets SIGTERM and still stops everything cleanly.
//
// The runner picks free ports and binds them a moment later; other test binaries start stacks
// beside this one, so a port can be taken in between. A start in a directory that was empty is
// then tried again, twice at most, on new ports in the emptied directory (a directory that held
// data is the caller's warm restart: its error is returned as it is).
func StartStack(ctx context.Context, o StackOptions) (*Stack, error) {
	if o.Dir == "" {
		return nil, errors.New("no stack directory")
	}
	entries, err := os.ReadDir(o.Dir)
	fresh := err == nil && len(entries) == 0
	for attempt := 0; ; attempt++ {
		s, err := startStack(ctx, o)
		if err == nil || !fresh || attempt == 2 || !portTaken(o.Dir, err) {
			return s, err
		}
		fmt.Fprintln(os.Stderr, "testenv: the stack lost a port to another process as it started; starting it again on new ports")
		if err := emptyDir(o.Dir); err != nil {
			return nil, err
		}
	}
}

// emptyDir removes everything inside dir, keeping dir (and its mode) itself.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// startStack is one attempt of StartStack.
func startStack(ctx context.Context, o StackOptions) (*Stack, error) {
	runner := o.Runner
	if runner == "" {
		var err error
		if runner, err = StackBinary(); err != nil {
			return nil, err
		}
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 3 * time.Minute
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 30 * time.Second
	}
	stateFile := stateFileIn(o.Dir)
	// A state file left by an earlier run of this directory would read as ready at once.
	if err := os.Remove(stateFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	logName := "stack-runner.log"
	if o.Services != "" {
		logName = "stack-runner-" + o.Services + ".log"
	}
	logPath := filepath.Join(o.Dir, logName)
	args := []string{"--dir", o.Dir, "--random-ports", "--state-file", stateFile}
	if o.Services != "" {
		args = append(args, "--services", o.Services)
	}
	if o.BinDir != "" {
		args = append(args, "--bin", o.BinDir)
	}
	if o.Demo {
		args = append(args, "--demo")
	}
	if o.Cluster {
		args = append(args, "--cluster")
	}
	if o.Replicas > 1 {
		args = append(args, "--replicas", strconv.Itoa(o.Replicas))
	}
	if o.Gateways > 1 {
		args = append(args, "--gateways", strconv.Itoa(o.Gateways))
	}
	if o.Sessions > 1 {
		args = append(args, "--sessions", strconv.Itoa(o.Sessions))
	}
	// The log is appended to, so a warm restart on the same directory keeps the earlier run's.
	cmd := exec.Command(runner, args...)
	if len(o.Env) > 0 {
		cmd.Env = append(os.Environ(), o.Env...)
	}
	proc, err := spawn.Run(cmd,
		spawn.Options{Name: "stack runner", LogPath: logPath, Group: true, DeathSignal: syscall.SIGTERM})
	if err != nil {
		return nil, err
	}
	s := &Stack{LogPath: logPath, proc: proc, stopTimeout: o.StopTimeout, stateFile: stateFile, runner: runner}

	timeout := time.NewTimer(o.ReadyTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-proc.Done():
			return nil, fmt.Errorf("stack runner exited before it was ready (%v); log:\n%s", proc.Err(), LogTail(logPath, 30))
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), s.Stop())
		case <-timeout.C:
			return nil, errors.Join(fmt.Errorf("stack not ready within %s; log:\n%s", o.ReadyTimeout, LogTail(logPath, 30)), s.Stop())
		case <-tick.C:
		}
		b, err := os.ReadFile(stateFile)
		if err != nil {
			continue
		}
		// The runner writes the file atomically, so a file that does not parse is a real fault.
		if err := json.Unmarshal(b, &s.State); err != nil {
			return nil, errors.Join(fmt.Errorf("state file %s: %w", stateFile, err), s.Stop())
		}
		if s.State.GatewayURL == "" || s.State.AdminToken == "" || len(s.State.Processes) == 0 {
			return nil, errors.Join(fmt.Errorf("state file %s lacks gatewayUrl, adminToken or processes", stateFile), s.Stop())
		}
		return s, nil
	}
}

// Pid is the runner's process id.
func (s *Stack) Pid() int { return s.proc.Pid() }

// Failed reports whether the runner has exited on its own (it restarts children that die, so
// this means the runner itself failed). Call it before Stop.
func (s *Stack) Failed() error {
	if s.proc.Exited() {
		return fmt.Errorf("stack runner exited while in use (%v); log:\n%s", s.proc.Err(), LogTail(s.LogPath, 30))
	}
	return nil
}

// Stop asks the runner to shut the stack down (killing it after the stop timeout), waits for it,
// and then checks that none of the processes it listed is still running. A kill, a non-zero
// exit or a process left behind is an error: a clean shutdown is part of the contract.
func (s *Stack) Stop() error {
	if s == nil {
		return nil
	}
	// The runner rewrites the state file when it restarts a process: check the current pids.
	_ = s.reloadState()
	err := s.stopRunner()
	if err != nil {
		err = fmt.Errorf("%w; log:\n%s", err, LogTail(s.LogPath, 20))
	}
	// The runner waits for its children, but a child it had to kill may still be on its way out.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, p := range s.State.Processes {
			if p.PID != s.proc.Pid() && PIDRunning(p.PID) {
				left = append(left, fmt.Sprintf("%s (pid %d)", p.Name, p.PID))
			}
		}
		if len(left) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return errors.Join(err, fmt.Errorf("still running after the stack stopped: %s", strings.Join(left, ", ")))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopRunner sends the runner SIGTERM and waits for it to exit, killing it after the stop
// timeout.
func (s *Stack) stopRunner() error {
	if err := s.proc.Stop(syscall.SIGTERM, s.stopTimeout); err != nil {
		return err
	}
	return s.proc.ExitErr()
}

// PIDRunning reports whether pid names a live process. A zombie counts as gone: in a container
// whose init does not reap, an exited orphan lingers as a zombie that holds nothing.
func PIDRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	f, err := ProcStatFields(pid)
	if err != nil || len(f) == 0 || f[0] == "" {
		return false
	}
	return f[0][0] != 'Z' && f[0][0] != 'X'
}

// ProcStatFields returns the fields of /proc/PID/stat that follow the command name (which is in
// parentheses and may contain spaces): [0] is the state, [11] and [12] the user and system CPU
// time in clock ticks.
func ProcStatFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("/proc/" + strconv.Itoa(pid) + "/stat: no command name")
	}
	return strings.Fields(s[i+1:]), nil
}

// LogTail returns the last n lines of a log file, indented, for error messages that should be
// readable without opening the file.
func LogTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  | " + strings.Join(lines, "\n  | ")
}

// clusterNodes are, in the cluster shape, the nodes the single-node engine names stand for: the
// ones the product dials, so a test that kills or pauses "clickhouse" takes the product's node.
var clusterNodes = map[string]string{
	EnginePostgres:   "postgres-primary",
	EngineClickHouse: "clickhouse-1-1",
	EngineVersityGW:  "versitygw-1",
}

// processPID is the pid the state lists for the named process; 0 when none.
func (s *Stack) processPID(name string) int {
	if node, ok := clusterNodes[name]; ok && s.State.Cluster {
		name = node
	}
	for _, p := range s.State.Processes {
		if p.Name == name {
			return p.PID
		}
	}
	return 0
}

// CrashClickHouse has the runner kill ClickHouse as a crash would (SIGKILL; the runner's
// SIGUSR1) and waits until it is gone. The runner keeps it down (it restarts an engine that
// dies by itself, KillEngine) until StartClickHouse; the rest of the stack keeps running.
func (s *Stack) CrashClickHouse(timeout time.Duration) error {
	pid := s.processPID("clickhouse")
	if err := s.proc.Signal(syscall.SIGUSR1); err != nil {
		return err
	}
	for deadline := time.Now().Add(timeout); PIDRunning(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("clickhouse (pid %d) still running %s after the crash request", pid, timeout)
		}
	}
	return nil
}

// StartClickHouse has the runner start ClickHouse again on the same data and port (its
// SIGUSR2) and waits until the runner has rewritten the state file with the new process, which
// it does once ClickHouse answers. State is updated.
func (s *Stack) StartClickHouse(stateFile string, timeout time.Duration) error {
	old := s.processPID("clickhouse")
	if err := s.proc.Signal(syscall.SIGUSR2); err != nil {
		return err
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		if err := s.Failed(); err != nil {
			return err
		}
		var st State
		if b, err := os.ReadFile(stateFile); err == nil && json.Unmarshal(b, &st) == nil {
			next := Stack{State: st}
			if pid := next.processPID("clickhouse"); pid != 0 && pid != old && PIDRunning(pid) {
				s.State = st
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("clickhouse not started again within %s; log:\n%s", timeout, LogTail(s.LogPath, 20))
		}
	}
}
