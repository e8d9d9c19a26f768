package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/testenv"
)

// DefaultArchiveScenes is how many committed scenes the archive measure suspends at once.
const DefaultArchiveScenes = 1000

// archiveScenes is the archive measure's scene count: Options.ArchiveScenes, or the default.
func (o Options) archiveScenes() int {
	if o.ArchiveScenes > 0 {
		return o.ArchiveScenes
	}
	return DefaultArchiveScenes
}

// archiveSuspend measures issue 4's bench: one PUT /api/v1/external-user with billingState
// 'suspended' and keepSplatIds [] that archives every one of n committed scenes of a customer.
// The scenes are uploaded and committed first through the gateway by uploadWorkers clients (not
// timed). wall gets the PUT's wall time, rate the scenes it archived per second. Postgres must
// then hold exactly n archived scenes of the customer and a used_bytes of 0, else the run is
// broken.
func (r *runner) archiveSuspend(ctx context.Context, st *testenv.Stack, mode string, t Tenant, wall, rate *Row) {
	fail := func(err error) {
		wall.Err, rate.Err = err, err
	}
	n := r.o.archiveScenes()
	gw := st.State.GatewayURL
	eu := "bench-archiver-" + mode
	file := fixtures.Splat(commitSplats)
	h := t.HeadersFor(eu)
	// Room for every scene, no scene cap.
	if _, err := call(gw, http.MethodPut, "/api/v1/external-user", h,
		map[string]any{"limitBytes": int64(len(file)) * int64(n) * 2, "maxSplats": nil}, http.StatusOK); err != nil {
		fail(fmt.Errorf("archive setup: %w", err))
		return
	}

	r.o.Log.Info("committing scenes to archive", "scenes", n, "workers", uploadWorkers)
	setup := time.Now()
	err := forEach(n, uploadWorkers, func(i int) error { return commitScene(ctx, t, gw, eu, file, i) })
	if err != nil {
		fail(fmt.Errorf("archive setup, commits: %w", err))
		return
	}
	if err := ctx.Err(); err != nil {
		fail(err)
		return
	}
	setupTook := time.Since(setup)
	r.o.Log.Info("scenes committed", "scenes", n, "took", setupTook.Round(time.Millisecond))

	r.o.Log.Info("suspending the customer", "scenes", n)
	t0 := time.Now()
	_, err = call(gw, http.MethodPut, "/api/v1/external-user", h,
		map[string]any{"billingState": "suspended", "keepSplatIds": []string{}}, http.StatusOK)
	took := time.Since(t0)
	if err != nil {
		fail(fmt.Errorf("suspend: %w", err))
		return
	}
	wall.Value = ms(took)
	rate.Value = float64(n) / took.Seconds()
	wall.Notes = fmt.Sprintf("one PUT billingState suspended, keepSplatIds []; %d scenes of %d B committed first (not timed, %.1f s)",
		n, len(file), setupTook.Seconds())
	rate.Notes = fmt.Sprintf("%d scenes in %.0f ms, retention workflow starts included", n, ms(took))

	archived, live, used, err := archiveState(ctx, st.State.PostgresURL, t.IntegrationID, eu)
	if err != nil {
		fail(fmt.Errorf("read archive state: %w", err))
		return
	}
	// These are faults, not a slow machine: the report then counts as broken.
	if archived != int64(n) || live != 0 || used != 0 {
		r.problems = append(r.problems, fmt.Errorf("archive on suspend (%s): want %d archived scenes, 0 live and used_bytes 0; got %d archived, %d live, used_bytes %d",
			mode, n, archived, live, used))
	}
}

// commitScene uploads and commits one small .splat for customer eu, expecting 201.
func commitScene(ctx context.Context, t Tenant, gw, eu string, file []byte, i int) error {
	fileURL, err := t.UploadSplat(gw, eu, file)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{"title": fmt.Sprintf("archive %d", i), "splatUrl": fileURL})
	status, raw, _, err := timedPost(ctx, gw+"/api/v1/splats", t.HeadersFor(eu), body)
	if err != nil {
		return err
	}
	if status != http.StatusCreated {
		return fmt.Errorf("commit %d: status %d: %s", i, status, clip(raw))
	}
	return nil
}

// archiveState reads a customer's archived and live scene counts and its storage counter
// straight from Postgres.
func archiveState(ctx context.Context, pgURL, integrationID, eu string) (archived, live, used int64, err error) {
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close(context.Background())
	err = conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM scenes WHERE owner_id = u.id AND archived_at IS NOT NULL),
		(SELECT count(*) FROM scenes WHERE owner_id = u.id AND archived_at IS NULL),
		u.used_bytes
		FROM external_users u WHERE u.integration_id = $1 AND u.external_user_id = $2`, integrationID, eu).
		Scan(&archived, &live, &used)
	return archived, live, used, err
}
