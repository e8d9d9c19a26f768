package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/testenv"
)

// GoalSmallBesideLarge is issue 36's: a thumbnail-size scene is ready beside the same
// integration's 1 M-Gaussian conversion about as soon as on an idle media worker (the two
// conversions share the machine's cores, not a queue).
var GoalSmallBesideLarge = &Goal{Target: 3, Unit: "× alone"}

// Shape of the lanes measure.
const (
	// lanesLarge is the large scan: 1 M Gaussians without harmonics (62 MB), a Streamed SOG.
	lanesLarge = 1_000_000
	// lanesSmall is the thumbnail-size scene: 2 000 Gaussians without harmonics (130 KB).
	lanesSmall = 2_000
)

// lanesRows are the rows of the lanes measure.
type lanesRows struct {
	alone, beside, ratio Row
}

func newLanesRows() *lanesRows {
	small, large := gaussians(lanesSmall), gaussians(lanesLarge)
	return &lanesRows{
		alone:  Row{Name: "small scene's time to ready, idle media worker (" + small + ", split)", Unit: "ms"},
		beside: Row{Name: "small scene's time to ready beside a " + large + " conversion of the same integration (" + small + ", split)", Unit: "ms"},
		ratio:  Row{Name: "small scene's time to ready, beside a large conversion ÷ alone", Unit: "×", Goal: GoalSmallBesideLarge},
	}
}

func (l *lanesRows) all() []*Row { return []*Row{&l.alone, &l.beside, &l.ratio} }

// lanesPhase runs the split stack (as `make dev` does, one media worker) cold with renditions on
// and measures the small lane (docs/guides/renditions.md#lanes): a small scene's time from its
// commit to its rendition ready, alone, then while the same integration's 1 M-Gaussian scan
// converts.
func (r *runner) lanesPhase(ctx context.Context, ready *Row, rows *lanesRows) {
	so := testenv.StackOptions{Services: "split", Env: []string{"SPLATHOST_RENDITION_MIN_BYTES=0"}}
	if !r.coldPhase(ctx, "lanes", so, ready, func(st *testenv.Stack) {
		r.withTenant(st, "lanes", func(t Tenant) {
			if err := r.lanes(ctx, st, t, rows); err != nil {
				r.keepLogs = true
				failRows(err, rows.all()...)
			}
		}, rows.all()...)
	}) {
		failRows(ready.Err, rows.all()...)
	}
}

func (r *runner) lanes(ctx context.Context, st *testenv.Stack, t Tenant, rows *lanesRows) error {
	log := r.o.Log.With("measure", "lanes")
	stand := fixtures.Gen{Seed: fixtures.DefaultSeed, Scene: fixtures.SceneStand}
	small, large := stand.PLY(lanesSmall), stand.PLY(lanesLarge)
	gw := st.State.GatewayURL
	commit := func(title, name string, data []byte) (string, error) {
		fileURL, err := t.UploadFile(gw, t.ExternalUserID, name, "application/ply", data)
		if err != nil {
			return "", err
		}
		body, err := call(gw, http.MethodPost, "/api/v1/splats", t.Headers(),
			map[string]any{"title": title, "splatUrl": fileURL}, http.StatusCreated)
		if err != nil {
			return "", err
		}
		id, _ := body["splatId"].(string)
		return id, nil
	}
	// timeSmall commits a small scene and returns its time from the commit to ready.
	timeSmall := func(title string) (time.Duration, error) {
		start := time.Now()
		id, err := commit(title, "small.ply", small)
		if err != nil {
			return 0, err
		}
		if _, err := waitRendition(ctx, gw, t, id, 20*time.Minute); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	// The first conversion of a cold media worker loads the converter; it is not the lane's.
	if _, err := timeSmall("warm-up"); err != nil {
		return err
	}
	alone, err := timeSmall("alone")
	if err != nil {
		return err
	}
	log.Info("committing the large scan", "bytes", len(large))
	largeID, err := commit("large", "large.ply", large)
	if err != nil {
		return err
	}
	// Give the large conversion its start, as a scan committed a moment earlier would have.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(3 * time.Second):
	}
	beside, err := timeSmall("beside")
	if err != nil {
		return err
	}
	state, err := sceneState(gw, t, largeID)
	if err != nil {
		return err
	}
	rows.alone.Value = float64(alone.Milliseconds())
	rows.beside.Value = float64(beside.Milliseconds())
	rows.beside.Notes = fmt.Sprintf("the large scan was %s when the small scene was ready", state)
	rows.ratio.Value = beside.Seconds() / alone.Seconds()
	rows.ratio.Notes = "one media worker, one large and one small conversion slot"
	// The large conversion is not measured: stop it rather than wait for it (with the small lane
	// switched off, SPLATHOST_RENDITION_SMALL_BYTES=0, it is over by now).
	if state != "pending" {
		return nil
	}
	return keepAsUploaded(ctx, st, largeID)
}

// sceneState is a scene's rendition state (pending, ready, failed, skipped).
func sceneState(gw string, t Tenant, id string) (string, error) {
	body, err := call(gw, http.MethodGet, "/api/v1/splats/"+id, t.Headers(), nil, http.StatusOK)
	if err != nil {
		return "", err
	}
	sp, _ := body["splat"].(map[string]any)
	p, _ := sp["processing"].(map[string]any)
	s, _ := p["state"].(string)
	return s, nil
}
