package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// event is one line of `go test -json` (go doc test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
	ImportPath string // build-output and build-fail events
}

// render shows a go test -json stream as a reader of a CI log wants it: a line per package and
// the whole output of every failed test or package; passing tests stay quiet (their output is
// in the kept .json).
func render(r io.Reader, w io.Writer) error {
	type key struct{ pkg, test string }
	buf := map[key][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // not an event: say it as it came
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "output":
			buf[k] = append(buf[k], e.Output)
		case "pass", "skip":
			if e.Test == "" && e.Action == "pass" {
				fmt.Fprintf(w, "ok  \t%s\t%.1fs\n", e.Package, e.Elapsed)
			}
			delete(buf, k)
		case "fail":
			fmt.Fprint(w, strings.Join(buf[k], ""))
			delete(buf, k)
			if e.Test == "" {
				fmt.Fprintf(w, "FAIL\t%s\t%.1fs\n", e.Package, e.Elapsed)
			}
		}
	}
	// A stream cut short (a killed binary) leaves tests without an end: show what they said.
	for k, lines := range buf {
		if k.test != "" {
			fmt.Fprintf(w, "(no result) %s %s:\n%s", k.pkg, k.test, strings.Join(lines, ""))
		}
	}
	return sc.Err()
}

// result is a test's or a package's end.
type result struct {
	Package, Test string
	Elapsed       float64
	Failed        bool
}

// readResults returns the ends of the tests and packages in the go test -json files of dir.
func readResults(dir string) ([]result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var all []result
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		rs, err := results(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		all = append(all, rs...)
	}
	return all, nil
}

func results(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Action == "pass" || e.Action == "fail" {
			out = append(out, result{Package: e.Package, Test: e.Test, Elapsed: e.Elapsed, Failed: e.Action == "fail"})
		}
	}
	return out, sc.Err()
}
