package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// The engines of a stack are the servers the runner supervises: "postgres", "clickhouse",
// "versitygw" and "temporal" (the cluster shape's nodes by their own names, temporal-history-1
// and so on, which KillEngine takes as they are). The runner restarts one that dies
// on the same data and ports, so a test can crash one under load and watch the product recover.
const (
	EnginePostgres   = "postgres"
	EngineClickHouse = "clickhouse"
	EngineVersityGW  = "versitygw"
)

// engineRestartTimeout bounds KillEngine's wait for the runner to restart an engine: its
// backoff, Postgres's crash recovery and the health check.
const engineRestartTimeout = 2 * time.Minute

// EnginePID is the pid the runner's state file lists for an engine right now (it rewrites the
// file when it restarts one), or an error when the stack lists no such engine.
func (s *Stack) EnginePID(name string) (int, error) {
	if err := s.reloadState(); err != nil {
		return 0, err
	}
	if name == "stack" {
		return 0, fmt.Errorf("%q is the runner, not an engine", name)
	}
	if pid := s.processPID(name); pid > 0 {
		return pid, nil
	}
	return 0, fmt.Errorf("the stack lists no engine %q", name)
}

// KillEngine kills an engine with SIGKILL, as a crash would (only its main process: a
// postmaster's backends are left to notice), and returns once the runner has started it again
// and it answers (the runner lists the new pid only then), with the time that took. State is
// updated.
func (s *Stack) KillEngine(name string) (time.Duration, error) {
	pid, err := s.EnginePID(name)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("kill %s (pid %d): %w", name, pid, err)
	}
	for deadline := t0.Add(engineRestartTimeout); ; time.Sleep(50 * time.Millisecond) {
		if err := s.Failed(); err != nil {
			return 0, err
		}
		if now, err := s.EnginePID(name); err == nil && now != pid && PIDRunning(now) {
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s not restarted within %s of its kill; runner log:\n%s", name, engineRestartTimeout, LogTail(s.LogPath, 20))
		}
	}
}

// PauseEngine stops an engine with SIGSTOP, its whole process group (every Postgres backend
// too): it keeps its connections open and answers nothing, as a hung server or a frozen host
// would. ResumeEngine must follow; the runner does not notice a stopped engine.
func (s *Stack) PauseEngine(name string) error { return s.signalEngine(name, syscall.SIGSTOP) }

// ResumeEngine continues an engine PauseEngine stopped (SIGCONT to its process group).
func (s *Stack) ResumeEngine(name string) error { return s.signalEngine(name, syscall.SIGCONT) }

// signalEngine sends sig to the engine's process group: each engine is the leader of a group
// of its own.
func (s *Stack) signalEngine(name string, sig syscall.Signal) error {
	pid, err := s.EnginePID(name)
	if err != nil {
		return err
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		return fmt.Errorf("%s to %s (process group %d): %w", sig, name, pid, err)
	}
	return nil
}

// RunnerCommand runs one of the runner's commands on this stack (`stack --dir DIR COMMAND`:
// pg-promote, pg-rebuild, the cluster shape's Postgres failover) and returns what it printed
// once it has finished. State is read again from the file the command rewrote.
func (s *Stack) RunnerCommand(command string) (string, error) {
	out, err := exec.Command(s.runner, "--dir", filepath.Dir(s.stateFile), command).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("stack %s: %v: %s", command, err, out)
	}
	return string(out), s.reloadState()
}

// reloadState reads the runner's state file again (it lists restarted processes' new pids).
func (s *Stack) reloadState() error {
	b, err := os.ReadFile(s.stateFile)
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("state file %s: %w", s.stateFile, err)
	}
	s.State = st
	return nil
}

// EnginePID is the pid of one of the stack's engines ("postgres", "clickhouse", "versitygw")
// as the runner lists it now.
func (e *Env) EnginePID(name string) (int, error) { return e.stack.EnginePID(name) }

// KillEngine kills one of the stack's engines with SIGKILL and returns once the runner has
// restarted it on the same data and ports and it answers, with how long that took. Tests of
// one binary share the stack: the product must recover by itself, the test need not clean up.
func (e *Env) KillEngine(name string) (time.Duration, error) {
	d, err := e.stack.KillEngine(name)
	e.State = e.stack.State
	return d, err
}

// RunnerCommand runs one of the stack runner's commands (Stack.RunnerCommand); State is
// updated.
func (e *Env) RunnerCommand(command string) (string, error) {
	out, err := e.stack.RunnerCommand(command)
	e.State = e.stack.State
	return out, err
}

// PauseEngine freezes one of the stack's engines (SIGSTOP to its process group): connections
// stay open and nothing answers, as with a hung server. A test that calls it must call
// ResumeEngine before it ends (t.Cleanup), since the other tests share the stack.
func (e *Env) PauseEngine(name string) error { return e.stack.PauseEngine(name) }

// ResumeEngine continues an engine PauseEngine froze.
func (e *Env) ResumeEngine(name string) error { return e.stack.ResumeEngine(name) }

// stateFileIn is the runner's state file in a stack directory (StartStack's choice).
func stateFileIn(dir string) string { return filepath.Join(dir, "stack.json") }
