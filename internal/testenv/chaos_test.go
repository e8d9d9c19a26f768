package testenv

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The results file is appended to by each case and read back by the benchmark: a rerun of a
// case replaces its earlier row, and a missed promise is marked in the table.
func TestChaosResultsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	t.Setenv(ChaosResultsEnv, path)
	require.NoError(t, AppendChaosResult(ChaosResult{Case: "a", Passed: false, Figures: []ChaosFigure{{Name: "x", Value: 1, Want: "= 0"}}}))
	require.NoError(t, AppendChaosResult(ChaosResult{Case: "b", Passed: true, Notes: "fine"}))
	require.NoError(t, AppendChaosResult(ChaosResult{Case: "a", Passed: false, Seconds: 2,
		Figures: []ChaosFigure{{Name: "x", Value: 3, Want: "= 0"}, {Name: "sent", Value: 10, OK: true}}}))
	got, err := ReadChaosResults(path)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "a", got[0].Case)
	require.EqualValues(t, 3, got[0].Figures[0].Value, "the rerun wins")
	var b strings.Builder
	failed, err := WriteChaosTable(&b, got)
	require.NoError(t, err)
	require.Equal(t, 1, failed)
	require.Contains(t, b.String(), "| a | **FAIL** (2 s) | x | 3 | **= 0 missed** |")
	require.Contains(t, b.String(), "|  |  | sent | 10 | — |")
	require.Contains(t, b.String(), "| b | pass (0 s) | — | — | — |")
	require.Contains(t, b.String(), "- b: fine")
}
