// Package spawn starts child processes so that their parent-death signal means what it says.
//
// Linux delivers a child's parent-death signal (syscall.SysProcAttr.Pdeathsig) when the OS
// thread that forked it exits, not when the parent process does (see go.dev/issue/27505). The Go
// runtime may retire an idle thread at any time, so a child started by exec.Cmd.Start from an
// arbitrary goroutine can be signalled while its parent is alive and well: the stack runner
// would lose Postgres, or a test or benchmark its stack, in the middle of a run. Start forks
// every child from one dedicated OS thread that is locked and never exits, which ties the signal
// to the death of the whole process.
//
// The stack runner, the test harness and the benchmark start every child through Run, the one
// child-process wrapper: the command's environment and arguments, its log file, its process
// group and parent-death signal, a reaper so that anyone can wait for it, and a graceful stop
// that kills after a grace period (proc.go). The media converter, a one-shot command read to its
// end and measured as it runs (media.Transform), calls Start itself.
package spawn

import (
	"os/exec"
	"runtime"
	"sync"
)

// job hands a command to the spawner thread.
type job struct {
	cmd    *exec.Cmd
	result chan error
}

var (
	once sync.Once
	jobs chan job
)

// Start is cmd.Start run on the spawner thread; it returns once the child has started (or
// failed to). Wait for the child as usual, from any goroutine.
func Start(cmd *exec.Cmd) error {
	once.Do(func() {
		jobs = make(chan job)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for j := range jobs {
				j.result <- j.cmd.Start()
			}
		}()
	})
	j := job{cmd: cmd, result: make(chan error, 1)}
	jobs <- j
	return <-j.result
}
