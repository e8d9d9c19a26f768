package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPartitionPutsEveryTestInOneShardAndBalances(t *testing.T) {
	tests := []string{"TestA", "TestB", "TestC", "TestD", "TestE", "TestNew"}
	known := map[string]float64{"TestA": 100, "TestB": 60, "TestC": 50, "TestD": 30, "TestE": 10}
	parts := partition(tests, known, 3)
	if len(parts) != 3 {
		t.Fatalf("%d shards, want 3", len(parts))
	}
	var all []string
	for _, p := range parts {
		all = append(all, p...)
	}
	slices.Sort(all)
	if !slices.Equal(all, tests) {
		t.Fatalf("shards hold %v, want each of %v once", all, tests)
	}
	// Longest first to the least loaded: A alone (100); C+D (80); B+E+TestNew (75, a new test weighs 5).
	var loads []float64
	for _, p := range parts {
		loads = append(loads, weight(p, known))
	}
	slices.Sort(loads)
	if !slices.Equal(loads, []float64{75, 80, 100}) {
		t.Fatalf("shard loads %v, want [75 80 100]", loads)
	}
	if got := partition([]string{"TestA"}, known, 3); len(got) != 1 {
		t.Fatalf("one test makes %d shards, want 1", len(got))
	}
}

func TestRunPatternSelectsExactlyTheNamedTests(t *testing.T) {
	re := regexp.MustCompile(runPattern([]string{"TestA", "TestB_x"}))
	for name, want := range map[string]bool{"TestA": true, "TestB_x": true, "TestAB": false, "TestB": false, "XTestA": false} {
		if re.MatchString(name) != want {
			t.Errorf("%s matched %v, want %v", name, !want, want)
		}
	}
}

func TestRenderShowsFailuresAndPackageLinesOnly(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"output","Package":"p","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"output","Package":"p","Test":"TestOK","Output":"chatty\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestOK","Elapsed":1}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"    bad_test.go:9: want 2\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestBad","Elapsed":2}`,
		`{"Action":"fail","Package":"p","Elapsed":3.25}`,
		`{"Action":"pass","Package":"q","Elapsed":0.5}`,
		`not json`,
	}, "\n")
	var out strings.Builder
	if err := render(strings.NewReader(stream), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"bad_test.go:9: want 2", "FAIL\tp\t3.2s", "ok  \tq\t0.5s", "not json"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "chatty") {
		t.Errorf("a passing test's output was shown:\n%s", got)
	}
}

func TestReportNamesCriticalPathAndSlowestTen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	steps := []step{
		{Name: "build", Start: at(0), End: at(100), OK: true},
		{Name: "vet", Start: at(0), End: at(80), OK: true},
		{Name: "e2e-1", Start: at(100), End: at(400), OK: true},
		{Name: "e2e-2", Start: at(100), End: at(380), OK: false},
	}
	var rs []result
	for i := range 12 {
		rs = append(rs, result{Package: "e", Test: fmt.Sprintf("Test%02d", i), Elapsed: float64(i)})
	}
	rs = append(rs, result{Package: "e", Test: "Test11/sub", Elapsed: 99}, result{Package: "e", Elapsed: 300}, result{Package: "u", Elapsed: 20})
	var out strings.Builder
	report(&out, steps, rs)
	got := out.String()
	for _, want := range []string{"critical path: build 100s -> e2e-1 300s", "2 test packages (e2e shards counted apart), 320s summed",
		"11.0s  Test11", "2.0s  Test02", "e2e-2  FAILED"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	// Ten tests: Test11 down to Test02; subtests are not tests of their own here.
	if strings.Contains(got, "Test01") || strings.Contains(got, "sub") {
		t.Errorf("report lists more than the ten slowest top-level tests:\n%s", got)
	}
}
