package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// spawnJob hands a command to the spawner thread.
type spawnJob struct {
	cmd    *exec.Cmd
	result chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnJob
)

// startChild starts cmd from one dedicated OS thread that lives as long as the benchmark.
// Linux sends Pdeathsig when the thread that forked the child exits, not when the process does;
// forking from an arbitrary goroutine's thread could stop a stack in the middle of a
// measurement if the runtime ever retired that thread.
func startChild(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnJob)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for job := range spawnCh {
				job.result <- job.cmd.Start()
			}
		}()
	})
	job := spawnJob{cmd: cmd, result: make(chan error, 1)}
	spawnCh <- job
	return <-job.result
}

// child is a started process reaped by a background goroutine.
type child struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // valid after done is closed
}

// startManaged starts cmd as a child that dies with the benchmark and sits in its own process
// group, so a terminal Ctrl-C reaches only the benchmark, which then stops its children in order.
func startManaged(name string, cmd *exec.Cmd, deathSignal syscall.Signal) (*child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: deathSignal, Setpgid: true}
	if err := startChild(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// exited reports whether the child has exited.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to timeout for the child to exit, then kills it. It reports
// a kill or a non-zero exit as an error: a clean shutdown is part of what the benchmark checks.
func (c *child) stop(timeout time.Duration) error {
	if !c.exited() {
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("%s: signal: %w", c.name, err)
		}
	}
	select {
	case <-c.done:
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("%s did not stop within %s and was killed", c.name, timeout)
	}
	if c.waitErr != nil {
		return fmt.Errorf("%s: %w", c.name, c.waitErr)
	}
	return nil
}

// pidRunning reports whether pid names a live process. A zombie counts as gone: in a container
// whose init does not reap, an exited orphan lingers as a zombie that holds nothing.
func pidRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may contain spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}
