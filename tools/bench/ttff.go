package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/spawn"
	"github.com/splathost/splathost/internal/testenv"
)

// GoalTTFF is issue 14's: a viewer shows the first frame of a 1 M-Gaussian scene at least three
// times sooner from its rendition than from its upload.
var GoalTTFF = &Goal{AtLeast: true, Target: 3, Unit: "× sooner"}

// Shape of the time-to-first-frame measure.
const (
	// ttffGaussians is the scene's size: a Streamed SOG from renditionLODMin on.
	ttffGaussians = 1_000_000
	// ttffRounds viewer loads of each variant, alternated, each in a fresh browser.
	ttffRounds = 2
	// ttffPageTimeout bounds one page's wait for its first frame (software WebGL is slow).
	ttffPageTimeout = 4 * time.Minute
)

// Chromium is Debian's Chromium, which the browser tests and this measure drive.
const Chromium = "/usr/bin/chromium"

// ttffLinks are the client links the measure loads the viewer over, in Mbit/s: loopback (0,
// what the machine alone allows; SwiftShader's rendering weighs most there) and a 100 Mbit/s
// line with 20 ms of latency (Chromium's network emulation), as a client on good broadband.
var ttffLinks = []int{0, 100}

// ttffRows are the rows of the time-to-first-frame measure, per link.
type ttffRows struct {
	links []ttffLink
}

// ttffLink is one link's rows.
type ttffLink struct {
	mbps                     int
	upload, rendition, ratio Row
}

func newTTFFRows() *ttffRows {
	name := gaussians(ttffGaussians)
	t := &ttffRows{}
	for _, mbps := range ttffLinks {
		link := "loopback"
		if mbps > 0 {
			link = fmt.Sprintf("%d Mbit/s", mbps)
		}
		t.links = append(t.links, ttffLink{mbps: mbps,
			upload:    Row{Name: "viewer time to first frame, upload (" + name + ", split, " + link + ")", Unit: "ms"},
			rendition: Row{Name: "viewer time to first frame, rendition (" + name + ", split, " + link + ")", Unit: "ms"},
			ratio:     Row{Name: "time to first frame, upload ÷ rendition (" + name + ", " + link + ")", Unit: "×", Goal: GoalTTFF},
		})
	}
	return t
}

func (t *ttffRows) all() []*Row {
	var rows []*Row
	for i := range t.links {
		l := &t.links[i]
		rows = append(rows, &l.upload, &l.rendition, &l.ratio)
	}
	return rows
}

func (t *ttffRows) fail(err error) {
	for _, r := range t.all() {
		r.Err = err
	}
}

// ttffPhase runs the split stack (as `make dev` does) and measures, in headless Chromium, the
// viewer's time to first frame and the bytes it fetched before it, for the same generated
// training scene (degree-3 harmonics) served as uploaded and as its rendition.
//
// The stack starts cold on a directory of its own with renditions on: the scene's conversion is
// the only one, as it would be on a media worker no other phase's scenes queue on.
func (r *runner) ttffPhase(ctx context.Context, ready *Row, rows *ttffRows) {
	so := testenv.StackOptions{Services: "split", Env: []string{"SPLATHOST_RENDITION_MIN_BYTES=0"}}
	if !r.coldPhase(ctx, "ttff", so, ready, func(st *testenv.Stack) {
		r.withTenant(st, "ttff", func(t Tenant) {
			if err := r.ttff(ctx, st, t, rows); err != nil {
				r.keepLogs = true
				rows.fail(err)
			}
		}, rows.all()...)
	}) {
		rows.fail(ready.Err)
	}
}

// ttff commits the scene twice: one copy gets its rendition, the other is kept as uploaded (its
// rendition workflow terminated and its state set to skipped, so no conversion competes for
// the CPU while the browser measures). The viewer loads each ttffRounds times, alternated.
func (r *runner) ttff(ctx context.Context, st *testenv.Stack, t Tenant, rows *ttffRows) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	if _, err := os.Stat(Chromium); err != nil {
		return fmt.Errorf("the browser measure needs %s (Debian's chromium; make deps)", Chromium)
	}
	log := r.o.Log.With("measure", "ttff")
	var ply bytes.Buffer
	stand := fixtures.Gen{Seed: fixtures.DefaultSeed, Scene: fixtures.SceneStand}
	if err := stand.WriteTrainingPLY(&ply, ttffGaussians, 3); err != nil {
		return err
	}
	gw := st.State.GatewayURL
	commit := func(title string) (string, error) {
		fileURL, err := t.UploadFile(gw, t.ExternalUserID, "scan.ply", "application/ply", ply.Bytes())
		if err != nil {
			return "", err
		}
		body, err := call(gw, http.MethodPost, "/api/v1/splats", t.Headers(),
			map[string]any{"title": title, "splatUrl": fileURL, "visibility": "public"}, http.StatusCreated)
		if err != nil {
			return "", err
		}
		id, _ := body["splatId"].(string)
		return id, nil
	}
	log.Info("committing the scene with its rendition", "bytes", ply.Len())
	withRendition, err := commit("TTFF rendition")
	if err != nil {
		return err
	}
	renditionURL, err := waitRendition(ctx, gw, t, withRendition, 20*time.Minute)
	if err != nil {
		return err
	}
	log.Info("rendition ready; committing the copy kept as uploaded")
	asUploaded, err := commit("TTFF upload")
	if err != nil {
		return err
	}
	if err := keepAsUploaded(ctx, st, asUploaded); err != nil {
		return err
	}

	var pages []map[string]any
	for i := 0; i < ttffRounds; i++ {
		for _, mbps := range ttffLinks {
			// Alternated, each side first in turn, so a drift of the machine over the run falls
			// on both sides.
			order := []struct{ variant, id string }{{"rendition", withRendition}, {"upload", asUploaded}}
			if i%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, v := range order {
				token, err := t.mintSession(gw, map[string]any{"type": "viewer", "splatId": v.id})
				if err != nil {
					return err
				}
				pages = append(pages, map[string]any{"variant": v.variant, "mbps": mbps,
					"url": gw + "/embed/viewer?session=" + url.QueryEscape(token)})
			}
		}
	}
	log.Info("loading the viewer", "pages", len(pages))
	results, err := runTTFF(ctx, root, pages)
	if err != nil {
		return err
	}
	for i := range rows.links {
		summarizeTTFF(results, &rows.links[i], renditionURL)
	}
	return nil
}

// summarizeTTFF fills a link's rows from the pages loaded over it. A page without a frame
// within the bound counts as the bound: its median, and the ratio, are then lower bounds, which
// the notes say.
func summarizeTTFF(results []ttffResult, l *ttffLink, renditionURL string) {
	summary := func(variant string, row *Row) (ms, bytesBefore float64, timeouts int) {
		var times, before, total []float64
		for _, res := range results {
			if res.Variant == variant && res.Mbps == l.mbps {
				times, before, total = append(times, res.TTFFMs), append(before, float64(res.BytesBeforeFirstFrame)), append(total, float64(res.BytesTotal))
				if res.Status == "timeout" {
					timeouts++
				}
			}
		}
		if len(times) == 0 {
			row.Err = fmt.Errorf("no %s page settled", variant)
			return 0, 0, 0
		}
		row.Value = medianOf(times)
		row.Notes = fmt.Sprintf("median of %d cold loads (%v ms); %.1f MB fetched before the first frame, %.1f MB in all",
			len(times), times, medianOf(before)/1e6, medianOf(total)/1e6)
		if timeouts > 0 {
			row.Notes += fmt.Sprintf("; %d of them drew no frame within %s (counted as %s)", timeouts, ttffPageTimeout, ttffPageTimeout)
		}
		return row.Value, medianOf(before), timeouts
	}
	up, upBytes, upTimeouts := summary("upload", &l.upload)
	rend, rendBytes, rendTimeouts := summary("rendition", &l.rendition)
	switch {
	case up <= 0 || rend <= 0:
		l.ratio.Err = errors.New("a side has no measure")
	case rendTimeouts > 0:
		l.ratio.Err = fmt.Errorf("the rendition drew no frame within %s", ttffPageTimeout)
	default:
		l.ratio.Value = up / rend
		l.ratio.Notes = fmt.Sprintf("bytes before the first frame %.1f× fewer; rendition %s", upBytes/max(rendBytes, 1), renditionURL)
		if upTimeouts > 0 {
			l.ratio.Notes = "at least (the upload timed out); " + l.ratio.Notes
		}
	}
}

// ttffResult is one line of web/bench/ttff.mjs.
type ttffResult struct {
	Variant               string  `json:"variant"`
	Mbps                  int     `json:"mbps"`
	Status                string  `json:"status"`
	TTFFMs                float64 `json:"ttffMs"`
	BytesBeforeFirstFrame int64   `json:"bytesBeforeFirstFrame"`
	BytesTotal            int64   `json:"bytesTotal"`
}

// runTTFF runs the browser half (web/bench/ttff.mjs) on pages and reads its lines.
func runTTFF(ctx context.Context, root string, pages []map[string]any) ([]ttffResult, error) {
	plan, err := json.Marshal(map[string]any{"chromium": Chromium, "timeoutMs": ttffPageTimeout.Milliseconds(), "pages": pages})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", filepath.Join("bench", "ttff.mjs"))
	cmd.Dir = filepath.Join(root, "web")
	cmd.Env = append(os.Environ(), "SPLATHOST_TTFF_PLAN="+string(plan))
	var stderr bytes.Buffer
	// The browser half's diagnostics (a page without a frame, with its console) go to the log too.
	cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	// The reaper's Wait returns once the pipe has taken the last line, then ends the reading.
	out, w := io.Pipe()
	cmd.Stdout = w
	// Chromium's processes share node's group, which a cancel kills whole.
	p, err := spawn.Run(cmd, spawn.Options{Name: "web/bench/ttff.mjs", Group: true, DeathSignal: syscall.SIGKILL})
	if err != nil {
		return nil, err
	}
	go func() { <-p.Done(); w.Close() }()
	defer context.AfterFunc(ctx, p.KillGroup)()
	var results []ttffResult
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var res ttffResult
		if json.Unmarshal(sc.Bytes(), &res) == nil && res.Variant != "" {
			if res.Status != "rendered" && res.Status != "timeout" {
				out.Close() // what the browser half still writes goes nowhere
				p.KillGroup()
				return nil, fmt.Errorf("the viewer showed %q for the %s", res.Status, res.Variant)
			}
			results = append(results, res)
		}
	}
	out.Close() // a line too long for the scanner must not leave the child blocked on the pipe
	<-p.Done()
	if err := p.Err(); err != nil {
		return nil, fmt.Errorf("web/bench/ttff.mjs: %w: %s", err, tail(stderr.String(), 2000))
	}
	return results, nil
}

// waitRendition polls the scene until its rendition is ready and returns its URL.
func waitRendition(ctx context.Context, gw string, t Tenant, id string, within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	for {
		body, err := call(gw, http.MethodGet, "/api/v1/splats/"+id, t.Headers(), nil, http.StatusOK)
		if err != nil {
			return "", err
		}
		sp, _ := body["splat"].(map[string]any)
		p, _ := sp["processing"].(map[string]any)
		switch p["state"] {
		case "ready":
			u, _ := p["renditionUrl"].(string)
			return u, nil
		case "pending":
		default:
			return "", fmt.Errorf("the rendition ended %v: %v", p["state"], p["message"])
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no rendition within %s", within)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// keepAsUploaded stops a scene's rendition: its workflow terminated (the conversion's next
// heartbeat cancels it) and its state skipped, so the re-drive leaves it alone and the viewer
// loads the upload.
func keepAsUploaded(ctx context.Context, st *testenv.Stack, id string) error {
	tc, err := client.Dial(client.Options{HostPort: st.State.TemporalAddr, Namespace: st.State.TemporalNamespace})
	if err != nil {
		return err
	}
	defer tc.Close()
	// The service starts the rendition just after the commit answers.
	for i := 0; ; i++ {
		err = tc.TerminateWorkflow(ctx, "renditions/"+id, "", "bench: this copy is measured as uploaded")
		if err == nil || i == 100 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("terminate the rendition of %s: %w", id, err)
	}
	conn, err := pgx.Connect(ctx, st.State.PostgresURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `UPDATE scenes SET processing_state = 'skipped', processing_message = 'bench: measured as uploaded' WHERE id = $1`, id)
	// The terminated conversion's converter goes at its next heartbeat (every 3 s).
	time.Sleep(5 * time.Second)
	return err
}

// medianOf is the median of v (v is sorted in place).
func medianOf(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
