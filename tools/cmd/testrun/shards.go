package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// unknownSeconds is the weight of a test no durations file knows (a new one): about the
// suite's median, so new tests spread over the shards.
const unknownSeconds = 5

func e2eCmd(args []string) error {
	fs := flag.NewFlagSet("e2e", flag.ExitOnError)
	out := fs.String("out", "", "directory of the run's records")
	bin := fs.String("bin", "", "the compiled test binary (go test -c)")
	dir := fs.String("dir", "", "the package's directory (go test runs a binary there)")
	pkg := fs.String("pkg", "", "the package's import path, to name the shards")
	shards := fs.Int("shards", 3, "how many shards, each with its own stack")
	durations := fs.String("durations", "", "files of test durations (NAME SECONDS lines), comma-separated; later ones win")
	save := fs.String("save", "", "file to write this run's measured durations to (merged into what it holds)")
	run := fs.String("run", ".", "run only the top-level tests this expression matches (as -test.list takes it)")
	_ = fs.Parse(args)
	if *out == "" || *bin == "" || *dir == "" || *pkg == "" || *shards < 1 {
		return errors.New("e2e needs -out, -bin, -dir, -pkg and -shards >= 1")
	}
	binPath, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	tests, err := listTests(binPath, *dir, *run)
	if err != nil {
		return err
	}
	known := map[string]float64{}
	for _, name := range strings.Split(*durations, ",") {
		if name != "" {
			if err := readDurations(name, known); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	parts := partition(tests, known, *shards)
	var wg sync.WaitGroup
	errs := make([]error, len(parts))
	for i, part := range parts {
		name := fmt.Sprintf("e2e-%d", i+1)
		fmt.Printf("%s: %d tests, about %.0fs by the last durations\n", name, len(part), weight(part, known))
		// test2json turns the binary's -test.v=test2json output into go test -json, as go test does.
		cmdArgs := []string{"tool", "test2json", "-t", "-p", fmt.Sprintf("%s#%d", *pkg, i+1), binPath,
			"-test.v=test2json", "-test.paniconexit0", "-test.run", runPattern(part)}
		cmd := exec.Command("go", append(cmdArgs, fs.Args()...)...)
		cmd.Dir = *dir
		cmd.Stderr = os.Stderr
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runStep(*out, name, cmd, true)
		}()
	}
	wg.Wait()
	if *save != "" {
		if err := saveDurations(*save, *out); err != nil {
			fmt.Fprintln(os.Stderr, "testrun: saving durations:", err)
		}
	}
	return errors.Join(errs...)
}

// listTests asks the binary for its tests, fuzz targets and examples matching run (what
// -test.run selects).
func listTests(bin, dir, run string) ([]string, error) {
	cmd := exec.Command(bin, "-test.list", run)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the tests of %s: %w", bin, err)
	}
	var tests []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Test") || strings.HasPrefix(line, "Fuzz") || strings.HasPrefix(line, "Example") {
			tests = append(tests, line)
		}
	}
	if len(tests) == 0 {
		return nil, fmt.Errorf("%s lists no tests", bin)
	}
	return tests, nil
}

// partition splits tests into at most n shards of about equal total duration: longest first,
// each to the shard with the least so far. Every test lands in exactly one shard.
func partition(tests []string, known map[string]float64, n int) [][]string {
	sorted := slices.Clone(tests)
	slices.SortStableFunc(sorted, func(a, b string) int {
		if wa, wb := seconds(a, known), seconds(b, known); wa != wb {
			if wa > wb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	n = min(n, len(sorted))
	parts := make([][]string, n)
	load := make([]float64, n)
	for _, t := range sorted {
		i := slices.Index(load, slices.Min(load))
		parts[i] = append(parts[i], t)
		load[i] += seconds(t, known)
	}
	for _, p := range parts {
		slices.Sort(p)
	}
	return parts
}

func seconds(test string, known map[string]float64) float64 {
	if s, ok := known[test]; ok {
		return s
	}
	return unknownSeconds
}

func weight(tests []string, known map[string]float64) float64 {
	var sum float64
	for _, t := range tests {
		sum += seconds(t, known)
	}
	return sum
}

// runPattern is the -test.run expression selecting exactly these top-level tests (and all their
// subtests).
func runPattern(tests []string) string {
	quoted := make([]string, len(tests))
	for i, t := range tests {
		quoted[i] = regexp.QuoteMeta(t)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// readDurations adds the NAME SECONDS lines of a file to known.
func readDurations(name string, known map[string]float64) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if s, err := strconv.ParseFloat(f[1], 64); err == nil {
			known[f[0]] = s
		}
	}
	return sc.Err()
}

// saveDurations merges the top-level test durations measured in dir's e2e shards into file.
func saveDurations(file, dir string) error {
	rs, err := readResults(dir)
	if err != nil {
		return err
	}
	known := map[string]float64{}
	if err := readDurations(file, known); err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, r := range rs {
		if r.Test != "" && !strings.Contains(r.Test, "/") && strings.Contains(r.Package, "#") {
			known[r.Test] = r.Elapsed
		}
	}
	return writeDurations(file, known)
}

func writeDurations(file string, known map[string]float64) error {
	var b strings.Builder
	b.WriteString("# seconds each e2e test took in a recent run (make test balances its shards with them)\n")
	for _, name := range slices.Sorted(maps.Keys(known)) {
		fmt.Fprintf(&b, "%s %.1f\n", name, known[name])
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}
