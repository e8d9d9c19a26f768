package stack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/spawn"
)

// procSpec describes one child process of the stack.
type procSpec struct {
	name    string
	path    string
	args    []string
	env     []string // nil inherits the runner's environment
	dir     string
	logPath string
	// cred runs the child as another user (Postgres refuses to run as root).
	cred *syscall.Credential
	// stopSignal asks the child to shut down cleanly; SIGTERM when zero.
	stopSignal syscall.Signal
	// deathSignal is what the kernel sends the child when the runner dies without stopping it;
	// SIGKILL when zero. Stateful servers get their clean-shutdown signal instead, so a killed
	// runner does not leave a database needing crash recovery.
	deathSignal syscall.Signal
}

// process is a running child (spawn.Proc). Its output goes to its log file, never to the
// runner's terminal.
type process struct {
	*spawn.Proc
	spec     procSpec
	logStart int64       // log size before this run, so error tails skip earlier runs
	started  time.Time   // when this run started, for the supervisor's backoff reset
	stopping atomic.Bool // set before a deliberate stop, so the exit is not reported as a crash
}

// startProcess launches a child with its stdout and stderr appended to spec.logPath.
func startProcess(spec procSpec) (*process, error) {
	logFile, err := spawn.OpenLog(spec.logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: open log: %w", spec.name, err)
	}
	fmt.Fprintf(logFile, "\n==== %s: starting %s %s\n", time.Now().Format(time.RFC3339), spec.path, strings.Join(spec.args, " "))
	var logStart int64
	if st, err := logFile.Stat(); err == nil {
		logStart = st.Size()
	}
	logFile.Close()

	death := spec.deathSignal
	if death == 0 {
		death = syscall.SIGKILL
	}
	cmd := exec.Command(spec.path, spec.args...)
	cmd.Env = spec.env
	cmd.Dir = spec.dir
	// Started from the spawner thread, so Pdeathsig fires only when the runner itself dies. A
	// separate process group keeps a terminal Ctrl-C from reaching the children directly: the
	// runner alone decides the shutdown order (services before the stores they use).
	proc, err := spawn.Run(cmd, spawn.Options{Name: spec.name, LogPath: spec.logPath, Group: true, DeathSignal: death, Credential: spec.cred})
	if err != nil {
		return nil, err
	}
	return &process{Proc: proc, spec: spec, logStart: logStart, started: time.Now()}, nil
}

// exitError describes how the child ended, with the tail of what it logged in this run.
func (p *process) exitError(when string) error {
	return fmt.Errorf("%s exited %s (%s); see %s:\n%s", p.spec.name, when, exitStatus(p), p.spec.logPath, logTailFrom(p.spec.logPath, p.logStart, 20))
}

// stop asks the child to exit with its stop signal and kills it once timeout has passed. A nil
// process (an engine that never started) has nothing to stop.
func (p *process) stop(timeout time.Duration) error {
	if p == nil {
		return nil
	}
	p.stopping.Store(true)
	if p.Exited() {
		return nil
	}
	sig := p.spec.stopSignal
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	// A child a test froze (testenv.PauseEngine: SIGSTOP to its group) would only act on the
	// stop signal once continued.
	_ = syscall.Kill(-p.Pid(), syscall.SIGCONT)
	return p.Stop(sig, timeout)
}

// logTail returns the last n lines of a log file, for error messages that should be readable
// without opening the file.
func logTail(path string, n int) string { return logTailFrom(path, 0, n) }

// logTailFrom is logTail ignoring everything before offset from.
func logTailFrom(path string, from int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "  (no log: " + err.Error() + ")"
	}
	defer f.Close()
	const maxRead = 16 << 10
	if st, err := f.Stat(); err == nil {
		from = max(from, st.Size()-maxRead)
		if from > 0 && from <= st.Size() {
			_, _ = f.Seek(from, io.SeekStart)
		}
	}
	b, _ := io.ReadAll(f)
	if len(bytes.TrimSpace(b)) == 0 {
		return "  (nothing logged)\n"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString("  | ")
		sb.Write(l)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// pidAlive reports whether a process with this id exists.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// pidCmdline returns a process's command line with arguments joined by spaces, or "" if it is gone.
func pidCmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// stopOrphan stops a server left running by a runner that died without cleaning up (for example
// one started by an older runner or killed with SIGKILL before Pdeathsig existed). It is called
// only while holding the data directory lock, so the server cannot belong to a live runner.
func stopOrphan(pid int, sig syscall.Signal, timeout time.Duration) error {
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !pidAlive(pid) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond)
	if pidAlive(pid) {
		return fmt.Errorf("pid %d survived SIGKILL", pid)
	}
	return nil
}
