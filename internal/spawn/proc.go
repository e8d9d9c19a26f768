package spawn

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Options say how Run starts a child, beyond what its exec.Cmd already says (path, arguments,
// environment, directory, and any stdout or stderr the caller wants to read itself).
type Options struct {
	// Name labels the child in errors.
	Name string
	// LogPath, when set, receives what the child writes to the stdout and stderr its command
	// leaves nil. The file is appended to, so a restart keeps the earlier runs' lines.
	LogPath string
	// Group puts the child in a process group of its own, so a terminal's Ctrl-C reaches only
	// the parent, which then stops its children in the order it chooses.
	Group bool
	// DeathSignal is what the kernel sends the child when this process dies; none when zero.
	DeathSignal syscall.Signal
	// Credential runs the child as another user (Postgres refuses to run as root).
	Credential *syscall.Credential
}

// Proc is a running child, reaped by a goroutine of its own so that any number of callers can
// wait for it (Done) and read how it ended (Err).
type Proc struct {
	// Cmd is the started command; Cmd.Process is the child.
	Cmd  *exec.Cmd
	name string
	done chan struct{}
	err  error
}

// OpenLog opens path for appending, creating it if needed: the one way a child's log is opened.
func OpenLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// Run starts cmd through Start with the process attributes o asks for and reaps it in the
// background. This process's copy of the log file is closed once the child has exited.
func Run(cmd *exec.Cmd, o Options) (*Proc, error) {
	var logf *os.File
	if o.LogPath != "" {
		f, err := OpenLog(o.LogPath)
		if err != nil {
			return nil, fmt.Errorf("%s: open log: %w", o.Name, err)
		}
		logf = f
		if cmd.Stdout == nil {
			cmd.Stdout = f
		}
		if cmd.Stderr == nil {
			cmd.Stderr = f
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: o.DeathSignal, Setpgid: o.Group, Credential: o.Credential}
	if err := Start(cmd); err != nil {
		if logf != nil {
			logf.Close()
		}
		return nil, fmt.Errorf("start %s: %w", o.Name, err)
	}
	p := &Proc{Cmd: cmd, name: o.Name, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if logf != nil {
			logf.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Done is closed once the child has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the child ended (nil for exit status 0); read it only after Done is closed.
func (p *Proc) Err() error { return p.err }

// ExitErr is Err labelled with the child's name, nil for exit status 0: for callers that count
// a non-zero exit after a stop as a fault.
func (p *Proc) ExitErr() error {
	if p.err != nil {
		return fmt.Errorf("%s: %w", p.name, p.err)
	}
	return nil
}

// Signal sends sig to the child; a child that has already exited is not an error.
func (p *Proc) Signal(sig syscall.Signal) error {
	if err := p.Cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Kill sends the child SIGKILL and waits until it is gone.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// KillGroup sends SIGKILL to the child's whole process group (Options.Group) and waits until
// the child is gone: for children whose own children must not outlive them (a browser's).
func (p *Proc) KillGroup() {
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Stop asks the child to exit with sig and kills it once grace has passed; it returns once the
// child is gone. A kill, or a signal that could not be sent, is an error; how the child exited
// is Err's (ExitErr's) to tell.
func (p *Proc) Stop(sig syscall.Signal, grace time.Duration) error {
	if !p.Exited() {
		if err := p.Signal(sig); err != nil {
			return fmt.Errorf("%s: signal: %w", p.name, err)
		}
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	p.Kill()
	return fmt.Errorf("%s did not stop within %s and was killed", p.name, grace)
}
