// Command testrun runs the steps of `make test` and says where the time went.
//
// Usage, from the repository root (the Makefile calls it; bin/testrun is built by `make test`):
//
//	testrun step -out DIR -name NAME [-json] -- COMMAND ARGS...
//	testrun e2e -out DIR -bin bin/e2e.test -dir e2e -pkg IMPORTPATH [-shards N] [-run REGEXP] [-durations FILES] [-save FILE] [-- TESTFLAGS...]
//	testrun report DIR
//
// step runs one command and records its start and end in DIR/steps.jsonl; with -json the
// command writes `go test -json` to its stdout, which is kept in DIR/NAME.json and shown as go
// test shows it (a line per package, the output of failed tests only).
//
// e2e runs one compiled test binary (go test -c) as N shards at once, each its own process and
// so, through the package's TestMain, its own stack: the binary's tests are split between the
// shards by their last measured durations (longest first, each to the least loaded shard), so
// the shards end together. Each shard is a step named e2e-K with its own DIR/e2e-K.json.
//
// report prints the steps with their start and duration, the critical path (the chain of steps
// each of which began when the one before it ended), the number of test packages with the sum
// of their times, and the ten slowest tests.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "step":
		err = stepCmd(os.Args[2:])
	case "e2e":
		err = e2eCmd(os.Args[2:])
	case "report":
		err = reportCmd(os.Args[2:])
	default:
		usage()
	}
	var exit *exitError
	if errors.As(err, &exit) {
		os.Exit(exit.code)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testrun step|e2e|report ... (see go doc ./tools/cmd/testrun)")
	os.Exit(2)
}

// exitError carries a command's failing exit code out of main without a message: the command
// already said what failed.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// step is one line of DIR/steps.jsonl.
type step struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	OK    bool      `json:"ok"`
}

func (s step) seconds() float64 { return s.End.Sub(s.Start).Seconds() }

// record appends s to DIR/steps.jsonl. Steps run in parallel processes: one write of one short
// line to a file opened for appending lands whole.
func record(dir string, s step) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "steps.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}

func stepCmd(args []string) error {
	fs := flag.NewFlagSet("step", flag.ExitOnError)
	out := fs.String("out", "", "directory of the run's records")
	name := fs.String("name", "", "the step's name")
	asJSON := fs.Bool("json", false, "the command writes go test -json on stdout")
	_ = fs.Parse(args)
	if *out == "" || *name == "" || fs.NArg() == 0 {
		return errors.New("step needs -out, -name and a command")
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stderr = os.Stderr
	return runStep(*out, *name, cmd, *asJSON)
}

// runStep runs cmd as the step name, recording it; with asJSON cmd's stdout is go test -json,
// kept in DIR/<name>.json and rendered on stdout. A failing command's exit code is returned as
// an *exitError.
func runStep(dir, name string, cmd *exec.Cmd, asJSON bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	s := step{Name: name, Start: time.Now()}
	var rendered chan error
	if asJSON {
		f, err := os.Create(filepath.Join(dir, jsonName(name)))
		if err != nil {
			return err
		}
		defer f.Close()
		pr, pw := io.Pipe()
		cmd.Stdout = pw
		rendered = make(chan error, 1)
		go func() {
			err := render(io.TeeReader(pr, f), os.Stdout)
			_, _ = io.Copy(f, pr) // keep the rest if rendering stopped early
			rendered <- err
		}()
		defer pw.Close()
		runErr := cmd.Run()
		_ = pw.Close()
		return finish(dir, s, runErr, <-rendered)
	}
	cmd.Stdout = os.Stdout
	return finish(dir, s, cmd.Run(), nil)
}

func finish(dir string, s step, runErr, renderErr error) error {
	s.End = time.Now()
	s.OK = runErr == nil
	if err := record(dir, s); err != nil {
		return err
	}
	if renderErr != nil {
		fmt.Fprintln(os.Stderr, "testrun: reading go test -json of", s.Name+":", renderErr)
	}
	var exit *exec.ExitError
	if errors.As(runErr, &exit) {
		return &exitError{code: max(exit.ExitCode(), 1)}
	}
	if runErr != nil {
		return fmt.Errorf("%s: %w", s.Name, runErr)
	}
	return nil
}

// jsonName is the file a step's go test -json is kept in.
func jsonName(step string) string { return step + ".json" }
