package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/splathost/splathost/internal/testenv"
)

// DefaultChaosResults is where `make chaos` leaves the fault and abuse suite's results (one JSON
// object a line, written by the e2e tests through testenv.AppendChaosResult).
const DefaultChaosResults = "bin/chaos-results.jsonl"

// WriteChaosReport prints the chaos results at path as a markdown table, under a heading that
// says when they were written, and returns how many cases failed. A missing file is reported,
// not an error: the suite has not been run on this checkout.
func WriteChaosReport(w io.Writer, path string) (failed int, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		_, err = fmt.Fprintf(w, "\n## Fault and abuse suite\n\nNo results in %s: run `make chaos`.\n", path)
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	results, err := testenv.ReadChaosResults(path)
	if err != nil {
		return 0, err
	}
	if _, err := fmt.Fprintf(w, "\n## Fault and abuse suite (%s, written %s)\n\n", path, st.ModTime().UTC().Format(time.RFC3339)); err != nil {
		return 0, err
	}
	failed, err = testenv.WriteChaosTable(w, results)
	if err != nil {
		return failed, err
	}
	_, err = fmt.Fprintf(w, "\n%d cases, %d failed.\n", len(results), failed)
	return failed, err
}
