package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPidRunning(t *testing.T) {
	if !PIDRunning(os.Getpid()) {
		t.Fatal("this process reads as gone")
	}
	if PIDRunning(0) || PIDRunning(-1) {
		t.Fatal("a non-positive pid reads as running")
	}
	// An exited child that is not yet reaped is a zombie, which counts as gone.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for PIDRunning(pid) {
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped child reads as running")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Wait()
	if PIDRunning(pid) {
		t.Fatal("a reaped child reads as running")
	}
}

func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := LogTail(path, 2), "  | two\n  | three"; got != want {
		t.Fatalf("LogTail = %q, want %q", got, want)
	}
	if got, want := LogTail(path, 5), "  | one\n  | two\n  | three"; got != want {
		t.Fatalf("LogTail = %q, want %q", got, want)
	}
	if got := LogTail(filepath.Join(t.TempDir(), "missing"), 2); got[:3] != "  (" {
		t.Fatalf("LogTail of a missing file = %q", got)
	}
}

// fakeRunner writes an executable stand-in for bin/stack. It finds --state-file among its
// arguments and then runs body, a shell fragment that can use $sf (the state file) and
// writeState JSON (an atomic write, as the real runner does).
func fakeRunner(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake-stack")
	script := `#!/bin/sh
sf=""
while [ $# -gt 0 ]; do
	if [ "$1" = --state-file ]; then sf=$2; fi
	shift
done
writeState() { printf '%s' "$1" > "$sf.tmp" && mv "$sf.tmp" "$sf"; }
` + body + "\n"
	// A runner that serves until SIGTERM sets its trap before anything else: its caller may stop
	// it the moment its state is written, before a trap set after writeState would be (a CI run
	// under a CPU hog saw the shell die of the signal).
	if rest, ok := strings.CutSuffix(body, serveUntilTerm); ok {
		script = strings.Replace(script, body, termTrap+"\n"+rest+serveLoop, 1)
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveUntilTerm is a fake runner's main loop: it stops like the real one on SIGTERM.
const serveUntilTerm = termTrap + "\n" + serveLoop

const (
	termTrap  = `trap 'rm -f "$sf"; exit 0' TERM`
	serveLoop = `while :; do sleep 0.05; done`
)

func fakeOptions(t *testing.T, runner string) StackOptions {
	return StackOptions{Dir: t.TempDir(), Services: "none", Runner: runner, ReadyTimeout: 5 * time.Second, StopTimeout: 5 * time.Second}
}

func TestStartStackReadsStateAndStops(t *testing.T) {
	runner := fakeRunner(t, `echo "runner started"
writeState '{"gatewayUrl":"http://g","adminToken":"tok","services":"none","readyMillis":42,"processes":[{"name":"stack","pid":'$$',"url":"http://u"}]}'
`+serveUntilTerm)
	o := fakeOptions(t, runner)
	// A state file left by an earlier run must not read as ready.
	if err := os.WriteFile(filepath.Join(o.Dir, "stack.json"), []byte(`{"gatewayUrl":"stale"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := StartStack(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s.State.GatewayURL != "http://g" || s.State.ReadyMillis != 42 || s.State.Services != "none" ||
		len(s.State.Processes) != 1 || s.State.Processes[0].PID != s.Pid() {
		t.Fatalf("state = %+v", s.State)
	}
	if err := s.Failed(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.LogPath != filepath.Join(o.Dir, "stack-runner-none.log") {
		t.Fatalf("log path %s", s.LogPath)
	}
	if got := LogTail(s.LogPath, 1); got != "  | runner started" {
		t.Fatalf("runner log tail %q", got)
	}
}

// TestStartStackEnv: Env reaches the runner (and so the processes it starts), on top of the
// caller's environment, a later entry of a key winning.
func TestStartStackEnv(t *testing.T) {
	t.Setenv("SPLATHOST_TEST_INHERITED", "kept")
	runner := fakeRunner(t, `echo "knob=$SPLATHOST_TEST_KNOB inherited=$SPLATHOST_TEST_INHERITED"
writeState '{"gatewayUrl":"http://g","adminToken":"tok","processes":[{"name":"stack","pid":'$$'}]}'
`+serveUntilTerm)
	o := fakeOptions(t, runner)
	o.Env = []string{"SPLATHOST_TEST_KNOB=first", "SPLATHOST_TEST_KNOB=second"}
	s, err := StartStack(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := LogTail(s.LogPath, 1); got != "  | knob=second inherited=kept" {
		t.Fatalf("runner saw %q", got)
	}
}

func TestStartStackRunnerExitsEarly(t *testing.T) {
	_, err := StartStack(t.Context(), fakeOptions(t, fakeRunner(t, `echo "no postgres"; exit 3`)))
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "no postgres") {
		t.Fatalf("err = %v", err)
	}
}

// TestStartStackRetriesALostPort: a runner that lost a port to another process (the bind error
// in its log) is started again on new ports in its emptied directory, twice at most; a
// directory that held data before the start (a warm restart) is never emptied.
func TestStartStackRetriesALostPort(t *testing.T) {
	count := filepath.Join(t.TempDir(), "attempts")
	runner := fakeRunner(t, `dir=$(dirname "$sf")
n=$(($(cat `+count+` 2>/dev/null || echo 0) + 1)); echo $n > `+count+`
if [ -e "$dir/leftover" ]; then echo "the directory was not emptied"; exit 4; fi
if [ $n -le FAILS ]; then touch "$dir/leftover"; echo "listen tcp 127.0.0.1:9: bind: address already in use"; exit 1; fi
writeState '{"gatewayUrl":"http://g","adminToken":"tok","processes":[{"name":"stack","pid":'$$'}]}'
`+serveUntilTerm)
	attempts := func() string {
		b, _ := os.ReadFile(count)
		return strings.TrimSpace(string(b))
	}
	for _, tc := range []struct {
		fails        string
		warm, starts bool
		attempts     string
	}{
		{"2", false, true, "3"},
		{"3", false, false, "3"},
		{"1", true, false, "1"},
	} {
		os.Remove(count)
		script, err := os.ReadFile(runner)
		if err != nil {
			t.Fatal(err)
		}
		r := filepath.Join(t.TempDir(), "fake-stack")
		if err := os.WriteFile(r, []byte(strings.ReplaceAll(string(script), "FAILS", tc.fails)), 0o755); err != nil {
			t.Fatal(err)
		}
		o := fakeOptions(t, r)
		if tc.warm {
			if err := os.WriteFile(filepath.Join(o.Dir, "postgres.data"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s, err := StartStack(t.Context(), o)
		if (err == nil) != tc.starts || attempts() != tc.attempts {
			t.Fatalf("%+v: err %v after %s attempts", tc, err, attempts())
		}
		if s != nil {
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(filepath.Join(o.Dir, "postgres.data")); tc.warm && err != nil {
			t.Fatalf("a warm directory lost its data: %v", err)
		}
	}
}

func TestStartStackRejectsIncompleteState(t *testing.T) {
	_, err := StartStack(t.Context(), fakeOptions(t, fakeRunner(t, `writeState '{"gatewayUrl":"http://g","adminToken":"tok"}'
`+serveUntilTerm)))
	if err == nil || !strings.Contains(err.Error(), "lacks gatewayUrl, adminToken or processes") {
		t.Fatalf("err = %v", err)
	}
}

func TestStartStackTimesOut(t *testing.T) {
	o := fakeOptions(t, fakeRunner(t, serveUntilTerm))
	o.ReadyTimeout = 300 * time.Millisecond
	_, err := StartStack(t.Context(), o)
	if err == nil || !strings.Contains(err.Error(), "not ready within 300ms") {
		t.Fatalf("err = %v", err)
	}
}

func TestStackFailedWhenRunnerExits(t *testing.T) {
	s, err := StartStack(t.Context(), fakeOptions(t, fakeRunner(t, `writeState '{"gatewayUrl":"http://g","adminToken":"tok","processes":[{"name":"stack","pid":'$$'}]}'
sleep 0.3; exit 1`)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Failed() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Failed reports nothing after the runner exited")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Stop(); err == nil || !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("Stop after a failed runner = %v", err)
	}
}

func TestStackStopReportsLeftoverProcess(t *testing.T) {
	// The runner lists a child it then leaves behind when it stops.
	s, err := StartStack(t.Context(), fakeOptions(t, fakeRunner(t, `sleep 30 &
writeState '{"gatewayUrl":"http://g","adminToken":"tok","processes":[{"name":"stack","pid":'$$'},{"name":"sleeper","pid":'$!'}]}'
`+serveUntilTerm)))
	if err != nil {
		t.Fatal(err)
	}
	sleeper := s.State.Processes[1].PID
	t.Cleanup(func() { _ = syscall.Kill(sleeper, syscall.SIGKILL) })
	err = s.Stop()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("still running after the stack stopped: sleeper (pid %d)", sleeper)) {
		t.Fatalf("err = %v", err)
	}
}
