package media

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/spawn"
)

// SplatTransformVersion is the converter version media/package.json pins; the media worker
// refuses to start with another, so every rendition of a deployment comes from one converter.
const SplatTransformVersion = "3.7.0"

// splatTransformCLI is where `make deps` installs the converter, relative to the repository.
const splatTransformCLI = "media/node_modules/@playcanvas/splat-transform/bin/cli.mjs"

// FindSplatTransform returns the converter's CLI: configured when set, else the pinned copy
// under the working directory or beside the executable's bin/ folder (the layouts `make dev`
// and a deployment image use).
func FindSplatTransform(configured string) (string, error) {
	if p, err := configuredOrPinned(configured, "SPLATHOST_SPLAT_TRANSFORM", splatTransformCLI); p != "" || err != nil {
		return p, err
	}
	return "", errors.New("splat-transform is not installed: run `make deps` (or set SPLATHOST_SPLAT_TRANSFORM)")
}

// Transform runs @playcanvas/splat-transform as a child process with bounds: a deadline, a
// ceiling on its resident memory and a lower CPU priority, so one hostile or huge scene fails
// its own rendition and never the worker (the child is killed, the worker goes on).
type Transform struct {
	// CLI is the path of splat-transform's bin/cli.mjs; Node is the node binary that runs it
	// (FindNode; empty: node from PATH).
	CLI  string
	Node string
	// Timeout bounds one run; MaxRSS bounds the child's resident memory in bytes (0: none).
	Timeout time.Duration
	MaxRSS  int64
	// Workers is splat-transform's --max-workers (its SOG encoding threads).
	Workers int
}

// ErrLimit is the cause of a run stopped for exceeding its time or memory: the input is too
// big or too costly for this deployment's bounds, which retrying will not change.
var ErrLimit = errors.New("conversion limit exceeded")

// RunError is a run the converter itself refused or failed: Detail is the end of what it
// printed (its error line), for the rendition's message.
type RunError struct {
	Detail string
	Err    error
}

// Error implements error.
func (e *RunError) Error() string { return "splat-transform: " + e.Detail }

// Unwrap gives the cause (ErrLimit, or the exit status).
func (e *RunError) Unwrap() error { return e.Err }

// InputError is a scene file this package cannot read (malformed, truncated, hostile): the
// rendition fails with its message; retrying cannot help.
type InputError struct{ Err error }

// Error implements error.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap gives the cause.
func (e *InputError) Unwrap() error { return e.Err }

// Version runs the converter's --version and returns the version it prints.
func (t Transform) Version(ctx context.Context) (string, error) {
	// It prints its version on stderr.
	out, err := exec.CommandContext(ctx, t.node(), t.CLI, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("splat-transform --version: %w", err)
	}
	v := strings.TrimSpace(string(out))
	// It prints "splat-transform v3.7.0 (hash)" or just the version.
	for _, f := range strings.Fields(v) {
		if f = strings.TrimPrefix(f, "v"); len(f) > 0 && f[0] >= '0' && f[0] <= '9' {
			return f, nil
		}
	}
	return v, nil
}

// Run converts: args are splat-transform's (inputs, actions, output); `-g cpu` (no GPU on the
// media worker), overwrite, plain-line progress and --max-workers are added. progress, when
// set, gets every line the converter prints (the activity heartbeats with them).
func (t Transform) Run(ctx context.Context, progress func(string), args ...string) error {
	_, err := t.RunPeak(ctx, progress, args...)
	return err
}

// RunPeak is Run that also reports the converter's peak resident size in bytes.
func (t Transform) RunPeak(ctx context.Context, progress func(string), args ...string) (int64, error) {
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	full := []string{t.CLI, "-g", "cpu", "--no-tty", "-w"}
	if t.Workers > 0 {
		full = append(full, "--max-workers", strconv.Itoa(t.Workers))
	}
	full = append(full, args...)
	cmd := exec.Command(t.node(), full...)
	// Its own process group, so a kill takes every thread and child; nice so the worker's own
	// heartbeats and the other activities keep the CPU they need. Pdeathsig (through
	// spawn.Start, which makes it follow the process, not the forking thread): a media worker
	// killed with SIGKILL or by the OOM killer takes its converter with it, instead of leaving
	// an orphan to burn CPU and memory beside the retry's own converter.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "NODE_OPTIONS=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stderr = cmd.Stdout // one stream: progress and errors in order
	if err := spawn.Start(cmd); err != nil {
		return 0, fmt.Errorf("starting splat-transform: %w", err)
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, 10)
	var tail tailBuffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 64<<10)
		for sc.Scan() {
			line := sc.Text()
			tail.add(line)
			if progress != nil {
				progress(line)
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	done := make(chan error, 1)
	go func() {
		wg.Wait()
		done <- cmd.Wait()
	}()
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var limit error
	for {
		select {
		case err := <-done:
			var peak int64
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				peak = ru.Maxrss << 10 // kilobytes on Linux
			}
			if limit != nil {
				return peak, &RunError{Detail: limit.Error(), Err: ErrLimit}
			}
			if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
				return peak, ctx.Err()
			}
			if err != nil {
				detail := tail.last()
				if detail == "" {
					detail = "the converter stopped without saying why (" + err.Error() + ")"
				}
				return peak, &RunError{Detail: detail, Err: err}
			}
			return peak, nil
		case <-ctx.Done():
			if limit == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				limit = fmt.Errorf("the conversion took longer than %s", t.Timeout)
			}
			kill()
		case <-tick.C:
			if t.MaxRSS > 0 && limit == nil {
				if rss := residentBytes(cmd.Process.Pid); rss > t.MaxRSS {
					limit = fmt.Errorf("the conversion needed more than %d MiB of memory", t.MaxRSS>>20)
					kill()
				}
			}
		}
	}
}

// residentBytes reads a process's resident set from /proc (0 when it cannot: the process is
// gone, or this is not Linux).
func residentBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := strings.Fields(string(v))
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// tailBuffer keeps the last lines a converter printed, for its error message. 32 lines hold
// the error line, its stack (5 frames from splat-transform) and the "failed in" footers.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
}

// tailLines is how many lines tailBuffer keeps.
const tailLines = 32

func (b *tailBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if line = strings.TrimSpace(line); line == "" {
		return
	}
	b.lines = append(b.lines, line)
	if len(b.lines) > tailLines {
		b.lines = b.lines[len(b.lines)-tailLines:]
	}
}

// last is the most telling recent line: the converter's error line ("✗ Error: …") when there is
// one, else the last line that says something. splat-transform ends a failure with footers
// ("✗ failed in 0.435s  [peak cpu=87.0MB]") and the error's stack frames ("at readPly (…)"),
// which name no cause: they are skipped. "" when no line is telling.
func (b *tailBuffer) last() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	fallback := ""
	for i := len(b.lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(strings.TrimPrefix(b.lines[i], "✗"))
		if silentLine(line) {
			continue
		}
		if strings.Contains(b.lines[i], "✗") || strings.Contains(strings.ToLower(line), "error") {
			return trimDetail(strings.TrimSpace(strings.TrimPrefix(line, "Error:")))
		}
		if fallback == "" {
			fallback = trimDetail(line)
		}
	}
	return fallback
}

// silentLine reports whether a converter line names no cause: a timing footer, a stack frame,
// a progress step or the version banner.
func silentLine(line string) bool {
	for _, p := range []string{"failed in ", "done in ", "at ", "▸ ", "splat-transform v"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// trimDetail keeps a message short enough for the scene row (processing_message).
func trimDetail(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
