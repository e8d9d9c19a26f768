package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is one entry of the state file's process list.
type Process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	URL  string `json:"url"`
}

// State is the part of the stack runner's stack.json the benchmark reads. It is declared here
// rather than imported from tools/stack because that package links the Temporal server, which
// would make this small binary a ten-minute build.
type State struct {
	GatewayURL  string    `json:"gatewayUrl"`
	AdminToken  string    `json:"adminToken"`
	PostgresURL string    `json:"postgresUrl"`
	Services    string    `json:"services"`
	LogDir      string    `json:"logDir"`
	ReadyMillis int64     `json:"readyMillis"`
	Processes   []Process `json:"processes"`
}

// StackOptions says how to start one stack.
type StackOptions struct {
	// Runner is the stack runner binary (bin/stack).
	Runner string
	// BinDir holds the product binaries the runner starts.
	BinDir string
	// Dir is the stack's data directory; a second stack on the same Dir is a warm restart.
	Dir string
	// Services is "split" or "allinone".
	Services string
	// ReadyTimeout bounds the wait for the state file.
	ReadyTimeout time.Duration
}

// Stack is a running stack runner.
type Stack struct {
	// State is what the runner wrote once everything was healthy.
	State State
	// LogPath is the runner's own log.
	LogPath string
	proc    *child
}

// StartStack runs `stack --dir DIR --random-ports --services MODE --bin BIN` and waits for its
// state file. It follows internal/testenv.StartStack, which the benchmark cannot use as is: that
// helper leaves the runner in the terminal's process group, so a Ctrl-C would reach the runner
// and the benchmark's own stop would then be the runner's second signal, which makes it exit
// without stopping Postgres and the rest in order.
func StartStack(ctx context.Context, o StackOptions) (*Stack, error) {
	stateFile := filepath.Join(o.Dir, "stack.json")
	// A state file left by an earlier run of this directory would read as ready at once.
	if err := os.Remove(stateFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	logPath := filepath.Join(o.Dir, "stack-runner-"+o.Services+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	cmd := exec.Command(o.Runner, "--dir", o.Dir, "--random-ports", "--services", o.Services,
		"--bin", o.BinDir, "--state-file", stateFile)
	cmd.Stdout, cmd.Stderr = logf, logf
	// SIGTERM on our death: the runner then still stops Postgres and the rest cleanly.
	proc, err := startManaged("stack runner", cmd, syscall.SIGTERM)
	if err != nil {
		return nil, err
	}
	s := &Stack{LogPath: logPath, proc: proc}

	timeout := time.NewTimer(o.ReadyTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-proc.done:
			return nil, fmt.Errorf("stack runner exited before it was ready (%v); log:\n%s", proc.waitErr, tailFile(logPath, 30))
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), s.Stop(30*time.Second))
		case <-timeout.C:
			return nil, errors.Join(fmt.Errorf("stack not ready within %s; log:\n%s", o.ReadyTimeout, tailFile(logPath, 30)),
				s.Stop(30*time.Second))
		case <-tick.C:
		}
		b, err := os.ReadFile(stateFile)
		if err != nil {
			continue
		}
		// The runner writes the file atomically, so a file that does not parse is a real fault.
		if err := json.Unmarshal(b, &s.State); err != nil {
			return nil, errors.Join(fmt.Errorf("state file %s: %w", stateFile, err), s.Stop(30*time.Second))
		}
		if s.State.GatewayURL == "" || s.State.AdminToken == "" || len(s.State.Processes) == 0 {
			return nil, errors.Join(fmt.Errorf("state file %s lacks gatewayUrl, adminToken or processes", stateFile),
				s.Stop(30*time.Second))
		}
		return s, nil
	}
}

// Failed reports whether the runner has exited on its own (it exits when a child dies).
func (s *Stack) Failed() error {
	if s.proc.exited() {
		return fmt.Errorf("stack runner exited during the benchmark (%v); log:\n%s", s.proc.waitErr, tailFile(s.LogPath, 30))
	}
	return nil
}

// Stop asks the runner to shut the stack down, waits for it, and then checks that none of the
// processes it listed is still running.
func (s *Stack) Stop(timeout time.Duration) error {
	err := s.proc.stop(timeout)
	if err != nil {
		err = fmt.Errorf("%w; log:\n%s", err, tailFile(s.LogPath, 20))
	}
	// The runner waits for its children, but a child it had to kill may still be on its way out.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, p := range s.State.Processes {
			if p.PID != s.proc.cmd.Process.Pid && pidRunning(p.PID) {
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

// tailFile returns the last n lines of a file, indented, for error messages.
func tailFile(path string, n int) string {
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
