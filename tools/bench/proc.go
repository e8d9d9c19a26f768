package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/spawn"
)

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
	if err := spawn.Start(cmd); err != nil {
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
