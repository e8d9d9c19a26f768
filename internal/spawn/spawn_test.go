package spawn

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestStartRunsCommand(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("want exit status 3, got %v", err)
	}
}

func TestStartReportsStartError(t *testing.T) {
	if err := Start(exec.Command("/nonexistent/splathost-spawn-test")); err == nil {
		t.Fatal("starting a missing binary succeeded")
	}
}

// TestChildOutlivesStartingThread starts children with a parent-death signal from goroutines
// whose OS threads then exit (a goroutine that ends while locked takes its thread with it). The
// children must not be signalled: they were forked by the spawner thread, not by those threads.
func TestChildOutlivesStartingThread(t *testing.T) {
	const n = 4
	cmds := make([]*exec.Cmd, n)
	var wg sync.WaitGroup
	for i := range cmds {
		wg.Go(func() {
			runtime.LockOSThread() // never unlocked: this thread exits with the goroutine
			cmd := exec.Command("sleep", "30")
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := Start(cmd); err != nil {
				t.Error(err)
				return
			}
			cmds[i] = cmd
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	done := make(chan error, n)
	for _, cmd := range cmds {
		go func() { done <- cmd.Wait() }()
	}
	select {
	case err := <-done:
		t.Fatalf("a child exited although this process lives: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	for _, cmd := range cmds {
		_ = cmd.Process.Kill()
	}
	for range cmds {
		<-done
	}
}
