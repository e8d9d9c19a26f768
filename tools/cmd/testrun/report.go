package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func reportCmd(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: testrun report DIR")
	}
	steps, err := readSteps(args[0])
	if err != nil {
		return err
	}
	rs, err := readResults(args[0])
	if err != nil {
		return err
	}
	report(os.Stdout, steps, rs)
	return nil
}

func readSteps(dir string) ([]step, error) {
	f, err := os.Open(filepath.Join(dir, "steps.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var steps []step
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	return steps, sc.Err()
}

// report prints the steps, the critical path, the packages' summed time and the slowest tests.
func report(w io.Writer, steps []step, rs []result) {
	if len(steps) > 0 {
		slices.SortFunc(steps, func(a, b step) int { return a.Start.Compare(b.Start) })
		t0 := steps[0].Start
		var end time.Time
		fmt.Fprintln(w, "\nsteps (start after the first, duration):")
		for _, s := range steps {
			mark := ""
			if !s.OK {
				mark = "  FAILED"
			}
			fmt.Fprintf(w, "  +%5.0fs %7.1fs  %s%s\n", s.Start.Sub(t0).Seconds(), s.seconds(), s.Name, mark)
			if s.End.After(end) {
				end = s.End
			}
		}
		path := criticalPath(steps)
		names := make([]string, len(path))
		for i, s := range path {
			names[i] = fmt.Sprintf("%s %.0fs", s.Name, s.seconds())
		}
		fmt.Fprintf(w, "critical path: %s (steps end %.0fs after the first began)\n", strings.Join(names, " -> "), end.Sub(t0).Seconds())
	}
	var pkgs int
	var sum float64
	var tests []result
	for _, r := range rs {
		switch {
		case r.Test == "":
			pkgs++
			sum += r.Elapsed
		case !strings.Contains(r.Test, "/"):
			tests = append(tests, r)
		}
	}
	fmt.Fprintf(w, "%d test packages (e2e shards counted apart), %.0fs summed\n", pkgs, sum)
	slices.SortStableFunc(tests, func(a, b result) int {
		if a.Elapsed != b.Elapsed {
			if a.Elapsed > b.Elapsed {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Test, b.Test)
	})
	fmt.Fprintln(w, "slowest ten tests:")
	for _, r := range tests[:min(10, len(tests))] {
		mark := ""
		if r.Failed {
			mark = "  FAILED"
		}
		fmt.Fprintf(w, "  %7.1fs  %s  (%s)%s\n", r.Elapsed, r.Test, r.Package, mark)
	}
}

// criticalPath walks back from the step that ended last: each step's predecessor is the step
// that ended last at or before it began (what it waited for), so the chain is what the run's
// length is made of.
func criticalPath(steps []step) []step {
	last := steps[0]
	for _, s := range steps {
		if s.End.After(last.End) {
			last = s
		}
	}
	path := []step{last}
	for {
		cur := path[len(path)-1]
		var prev *step
		for i, s := range steps {
			if !s.End.After(cur.Start) && (prev == nil || s.End.After(prev.End)) {
				prev = &steps[i]
			}
		}
		if prev == nil {
			break
		}
		path = append(path, *prev)
	}
	slices.Reverse(path)
	return path
}
