package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Goal is a threshold on a row's ratio (when it has a bare limit) or else on its value.
type Goal struct {
	// AtLeast is true for "≥ Target", false for "≤ Target".
	AtLeast bool
	// Target is the threshold.
	Target float64
	// Unit is shown after the target.
	Unit string
}

// String renders the goal for the table.
func (g *Goal) String() string {
	if g == nil {
		return "—"
	}
	op := "≤"
	if g.AtLeast {
		op = "≥"
	}
	s := op + " " + strconv.FormatFloat(g.Target, 'f', -1, 64)
	if g.Unit != "" {
		s += " " + g.Unit
	}
	return s
}

// met applies the goal to v.
func (g *Goal) met(v float64) bool {
	if g.AtLeast {
		return v >= g.Target
	}
	return v <= g.Target
}

// Row is one measure of the report. A row whose measure failed keeps its name and goal and
// carries the error instead of a value.
type Row struct {
	// Name says what was measured and in which services mode.
	Name string
	// Value is the measure, in Unit.
	Value float64
	Unit  string
	// Bare is the bare limit the value is compared with; zero when there is none.
	Bare float64
	Goal *Goal
	// Notes are details: latencies, failed requests, what a memory figure includes.
	Notes string
	// Err is why the measure failed.
	Err error
	// Sides are the product's and the bare server's results of an A/B comparison (RunAB), in
	// that order; empty for other measures.
	Sides []SideResult
}

// Ratio is Value / Bare, or 0 when the row has no bare limit.
func (r Row) Ratio() float64 {
	if r.Bare <= 0 || r.Err != nil {
		return 0
	}
	return r.Value / r.Bare
}

// Met says whether the goal was met; ok is false when there is no goal or no value.
func (r Row) Met() (met, ok bool) {
	if r.Goal == nil || r.Err != nil {
		return false, false
	}
	if r.Bare > 0 {
		return r.Goal.met(r.Ratio()), true
	}
	return r.Goal.met(r.Value), true
}

// Report is the benchmark's result.
type Report struct {
	Rows []Row
	// Elapsed is the wall time of the whole run.
	Elapsed time.Duration
	// Settings are the flags that shaped the run, shown with the table.
	Settings map[string]string
	// Problems are faults outside any one row (a stack that did not stop cleanly, say).
	Problems []error
}

// Broken reports whether something actually failed (as opposed to a goal missed because the
// machine is slow); the benchmark then exits non-zero.
func (r Report) Broken() bool {
	if len(r.Problems) > 0 {
		return true
	}
	for _, row := range r.Rows {
		if row.Err != nil {
			return true
		}
	}
	return false
}

func fmtValue(v float64, unit string) string {
	switch {
	case unit == "ms" || unit == "req/s":
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v != 0 && v > -0.1 && v < 0.1:
		// Small figures (an error, a fraction) keep two significant digits.
		return strconv.FormatFloat(v, 'g', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

// cells renders a row as the table's columns.
func (r Row) cells() []string {
	value, bare, ratio, met := "—", "—", "—", "—"
	if r.Err != nil {
		met = "ERROR"
	} else {
		value = fmtValue(r.Value, r.Unit)
		if r.Bare > 0 {
			bare = fmtValue(r.Bare, r.Unit)
			ratio = strconv.FormatFloat(r.Ratio(), 'f', 2, 64)
		}
		if m, ok := r.Met(); ok {
			met = map[bool]string{true: "yes", false: "no"}[m]
		}
	}
	notes := r.Notes
	if r.Err != nil {
		notes = summarize(r.Err)
	}
	return []string{r.Name, value, r.Unit, bare, ratio, r.Goal.String(), met, notes}
}

// summarize fits an error into a table cell: its first line and, when it quotes a log, the
// log's last line, which is usually the cause. The full text follows the table.
func summarize(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	s := lines[0]
	if len(lines) > 1 {
		s += " " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[len(lines)-1]), "|"))
	}
	if r := []rune(s); len(r) > 160 {
		s = string(r[:159]) + "…"
	}
	return s
}

// WriteMarkdown prints the report as one markdown table, then the settings, the total time and
// any problem in full.
func (r Report) WriteMarkdown(w io.Writer) error {
	header := []string{"measure", "value", "unit", "bare limit", "ratio", "goal", "met", "notes"}
	rows := [][]string{header}
	for _, row := range r.Rows {
		rows = append(rows, row.cells())
	}
	widths := make([]int, len(header))
	for _, cells := range rows {
		for i, c := range cells {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			b.WriteString(" " + c + strings.Repeat(" ", widths[i]-len([]rune(c))) + " |")
		}
		b.WriteString("\n")
	}
	line(rows[0])
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = strings.Repeat("-", widths[i])
	}
	line(sep)
	for _, cells := range rows[1:] {
		line(cells)
	}
	fmt.Fprintf(&b, "\n%s; total time %.1fs\n", r.settingsLine(), r.Elapsed.Seconds())
	// One failure often fails several rows (a stack that did not start): print each cause once.
	var causes []string
	rowsOf := map[string][]string{}
	for _, row := range r.Rows {
		if row.Err == nil || errors.Is(row.Err, context.Canceled) {
			continue
		}
		msg := row.Err.Error()
		if _, seen := rowsOf[msg]; !seen {
			causes = append(causes, msg)
		}
		rowsOf[msg] = append(rowsOf[msg], row.Name)
	}
	for _, msg := range causes {
		fmt.Fprintf(&b, "\nERROR in %s:\n%s\n", strings.Join(rowsOf[msg], "; "), msg)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "\nPROBLEM: %v\n", p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r Report) settingsLine() string {
	keys := []string{"concurrency", "warmup", "duration", "rounds", "pool", "idle", "memory unit"}
	var parts []string
	for _, k := range keys {
		if v, ok := r.Settings[k]; ok {
			parts = append(parts, k+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

// jsonRow is a row in the --json output; absent numbers are null.
type jsonRow struct {
	Name      string     `json:"name"`
	Value     *float64   `json:"value"`
	Unit      string     `json:"unit"`
	BareLimit *float64   `json:"bareLimit"`
	Ratio     *float64   `json:"ratio"`
	Goal      *string    `json:"goal"`
	Met       *bool      `json:"met"`
	Notes     string     `json:"notes,omitempty"`
	Error     string     `json:"error,omitempty"`
	Sides     []jsonSide `json:"sides,omitempty"`
}

// jsonSide is one side of an A/B comparison in the --json output: times in milliseconds, CPU per
// request in microseconds.
type jsonSide struct {
	Name            string    `json:"name"`
	RPS             float64   `json:"rps"`
	RoundRPS        []float64 `json:"roundRps"`
	P50ms           float64   `json:"p50Ms"`
	P99ms           float64   `json:"p99Ms"`
	Failures        int64     `json:"failures"`
	ServerCPUMicros float64   `json:"serverCpuMicrosPerRequest"`
	DBCPUMicros     float64   `json:"postgresCpuMicrosPerRequest"`
	ClientCPUMicros float64   `json:"clientCpuMicrosPerRequest"`
	ClientShare     float64   `json:"clientMachineShare"`
}

// WriteJSON prints the report as one JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	out := struct {
		Rows           []jsonRow         `json:"rows"`
		ElapsedSeconds float64           `json:"elapsedSeconds"`
		Settings       map[string]string `json:"settings"`
		Problems       []string          `json:"problems,omitempty"`
		Broken         bool              `json:"broken"`
	}{ElapsedSeconds: r.Elapsed.Seconds(), Settings: r.Settings, Broken: r.Broken(), Rows: []jsonRow{}}
	for _, row := range r.Rows {
		j := jsonRow{Name: row.Name, Unit: row.Unit, Notes: row.Notes}
		if row.Goal != nil {
			g := row.Goal.String()
			j.Goal = &g
		}
		if row.Err != nil {
			j.Error = row.Err.Error()
		} else {
			v := row.Value
			j.Value = &v
			if row.Bare > 0 {
				b, ratio := row.Bare, row.Ratio()
				j.BareLimit, j.Ratio = &b, &ratio
			}
			if m, ok := row.Met(); ok {
				j.Met = &m
			}
		}
		for i, sd := range row.Sides {
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			j.Sides = append(j.Sides, jsonSide{Name: []string{"product", "bare"}[min(i, 1)], RPS: sd.RPS, RoundRPS: sd.RoundRPS,
				P50ms: ms(sd.P50), P99ms: ms(sd.P99), Failures: sd.Failures(), ServerCPUMicros: us(sd.ServerCPU),
				DBCPUMicros: us(sd.DBCPU), ClientCPUMicros: us(sd.ClientCPU), ClientShare: sd.ClientShare})
		}
		out.Rows = append(out.Rows, j)
	}
	for _, p := range r.Problems {
		out.Problems = append(out.Problems, p.Error())
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
