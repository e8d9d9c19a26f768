package testenv

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ChaosResultsEnv names the file the fault and abuse suite (e2e, `make chaos`) appends its
// results to, one JSON object a line; unset, the figures are only logged.
const ChaosResultsEnv = "SPLATHOST_CHAOS_RESULTS"

// ChaosFigure is one number a chaos case measured, with what it must be.
type ChaosFigure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Want is the promise, for the table ("= 0", "≤ 1073741824", "= accepted"); empty when the
	// figure is context (how many requests were sent).
	Want string `json:"want,omitempty"`
	// OK says whether Value keeps the promise (true when Want is empty).
	OK bool `json:"ok"`
}

// ChaosResult is one case of the fault and abuse suite. The e2e tests write it, the benchmark
// (`bin/bench chaos-report`) prints it: one type, so writer and reader cannot drift apart.
type ChaosResult struct {
	Case    string        `json:"case"`
	Passed  bool          `json:"passed"`
	Seconds float64       `json:"seconds"`
	Figures []ChaosFigure `json:"figures"`
	// Notes say what the case did (its scale, the faults injected) and, when it failed, why.
	Notes string `json:"notes,omitempty"`
}

var chaosMu sync.Mutex

// AppendChaosResult appends r to the file named by $SPLATHOST_CHAOS_RESULTS, when set.
func AppendChaosResult(r ChaosResult) error {
	path := os.Getenv(ChaosResultsEnv)
	if path == "" {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	chaosMu.Lock()
	defer chaosMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}

// ReadChaosResults reads a results file; a case written twice (a rerun) keeps its last result.
func ReadChaosResults(path string) ([]ChaosResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ChaosResult
	index := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r ChaosResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if i, ok := index[r.Case]; ok {
			out[i] = r
			continue
		}
		index[r.Case] = len(out)
		out = append(out, r)
	}
	return out, sc.Err()
}

// WriteChaosTable prints results as one markdown table, a row per figure, and returns how many
// cases failed.
func WriteChaosTable(w io.Writer, results []ChaosResult) (failed int, err error) {
	var b strings.Builder
	b.WriteString("| case | result | figure | value | promise |\n|---|---|---|---|---|\n")
	for _, r := range results {
		verdict := "pass"
		if !r.Passed {
			verdict = "**FAIL**"
			failed++
		}
		verdict += fmt.Sprintf(" (%.0f s)", r.Seconds)
		if len(r.Figures) == 0 {
			fmt.Fprintf(&b, "| %s | %s | — | — | — |\n", r.Case, verdict)
		}
		for i, f := range r.Figures {
			c, v := "", ""
			if i == 0 {
				c, v = r.Case, verdict
			}
			want := f.Want
			if want == "" {
				want = "—"
			} else if !f.OK {
				want = "**" + want + " missed**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c, v, f.Name, strconv.FormatFloat(f.Value, 'f', -1, 64), want)
		}
	}
	for _, r := range results {
		if r.Notes != "" {
			fmt.Fprintf(&b, "\n- %s: %s", r.Case, r.Notes)
		}
	}
	b.WriteString("\n")
	_, err = io.WriteString(w, b.String())
	return failed, err
}
