package spawn

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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

func TestRunLogsAndReportsExit(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	if err := os.WriteFile(log, []byte("earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "echo out; echo err >&2; exit 4")
	p, err := Run(cmd, Options{Name: "child", LogPath: log, Group: true, DeathSignal: syscall.SIGKILL})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if !p.Exited() {
		t.Fatal("Exited is false after Done")
	}
	if ee, ok := p.Err().(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("want exit status 4, got %v", p.Err())
	}
	if err := p.ExitErr(); err == nil || !strings.HasPrefix(err.Error(), "child: ") {
		t.Fatalf("ExitErr = %v, want it labelled with the name", err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != "earlier run\nout\nerr\n" {
		t.Fatalf("log = %q, want the earlier run kept and both streams appended", got)
	}
}

func TestRunReportsStartError(t *testing.T) {
	_, err := Run(exec.Command("/nonexistent/splathost-spawn-test"), Options{Name: "missing"})
	if err == nil || !strings.HasPrefix(err.Error(), "start missing: ") {
		t.Fatalf("want a start error naming the child, got %v", err)
	}
}

func TestStopGraceful(t *testing.T) {
	// The child leaves on SIGINT with status 0 within the grace period.
	p, err := Run(exec.Command("sh", "-c", "trap 'exit 0' INT; while :; do sleep 0.05; done"), Options{Name: "polite", Group: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the shell install its trap
	if err := p.Stop(syscall.SIGINT, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.ExitErr(); err != nil {
		t.Fatalf("a clean exit reads as %v", err)
	}
	// Stopping a child that is gone is no error.
	if err := p.Stop(syscall.SIGTERM, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	// An ignored signal is inherited across exec, so sleep itself ignores SIGTERM.
	p, err := Run(exec.Command("sh", "-c", "trap '' TERM; exec sleep 30"), Options{Name: "stubborn"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	err = p.Stop(syscall.SIGTERM, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "stubborn did not stop within 300ms and was killed") {
		t.Fatalf("want a kill reported, got %v", err)
	}
	if !p.Exited() || time.Since(t0) > 5*time.Second {
		t.Fatal("Stop returned before the child was gone, or too late")
	}
}

func TestKillGroupTakesGrandchildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	p, err := Run(exec.Command("sh", "-c", "sleep 30 & echo $! > "+pidFile+"; wait"), Options{Name: "parent", Group: true})
	if err != nil {
		t.Fatal(err)
	}
	var grandchild int
	for deadline := time.Now().Add(5 * time.Second); grandchild == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the grandchild never started")
		}
		b, _ := os.ReadFile(pidFile)
		grandchild, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	p.KillGroup()
	for deadline := time.Now().Add(5 * time.Second); alive(grandchild); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the grandchild outlived its group's kill")
		}
	}
}

// alive reports whether pid runs; a zombie (exited, not yet reaped by whoever inherited it)
// does not.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
