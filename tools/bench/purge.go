package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/testenv"
)

// purgeCycles is how many clone-then-delete cycles the purge measure times.
const purgeCycles = 100

// purgeStall is how long the purge measure waits without a purge closing before it gives up.
const purgeStall = 2 * time.Minute

// purgeRows are the purge measure's rows: how long a scene DELETE's purge stays open.
type purgeRows struct{ p50, p99 Row }

func newPurgeRows(mode string) *purgeRows {
	return &purgeRows{
		p50: Row{Name: "scene purge after DELETE, queued to closed, p50, " + mode, Unit: "ms"},
		p99: Row{Name: "scene purge after DELETE, queued to closed, p99, " + mode, Unit: "ms"},
	}
}

func (p *purgeRows) all() []*Row { return []*Row{&p.p50, &p.p99} }

// purgeLatency measures scene purges on the stack's one ClickHouse node (issue 40): one customer
// clones a small scene and deletes the clone, purgeCycles times one after the other, and once
// every purge closed, the p50 and p99 of their time from queued to closed, read from
// asset_purges (the purge removes the objects and marks the scene's views deleted: an insert,
// no mutation).
func (r *runner) purgeLatency(ctx context.Context, st *testenv.Stack, t Tenant, rows *purgeRows) {
	if err := purgeCyclesOn(ctx, st, t, rows); err != nil {
		failRows(err, rows.all()...)
	}
}

func purgeCyclesOn(ctx context.Context, st *testenv.Stack, t Tenant, rows *purgeRows) error {
	gw, eu := st.State.GatewayURL, "bench-purger"
	h := t.HeadersFor(eu)
	body, err := call(gw, http.MethodPut, "/api/v1/external-user", h, map[string]any{"limitBytes": int64(1) << 30, "maxSplats": nil}, http.StatusOK)
	if err != nil {
		return fmt.Errorf("purge setup: %w", err)
	}
	owner, _ := body["externalUser"].(map[string]any)["id"].(string)
	fileURL, err := t.UploadSplat(gw, eu, fixtures.Splat(1000))
	if err != nil {
		return fmt.Errorf("purge setup: %w", err)
	}
	src, err := callID(gw, http.MethodPost, "/api/v1/splats", h, map[string]any{"title": "Bench purge source", "splatUrl": fileURL}, http.StatusCreated, "splatId")
	if err != nil {
		return fmt.Errorf("purge setup: %w", err)
	}
	t0 := time.Now()
	for range purgeCycles {
		id, err := callID(gw, http.MethodPost, "/api/v1/splats/"+src+"/clone", h, nil, http.StatusCreated, "splatId")
		if err != nil {
			return err
		}
		if _, err := call(gw, http.MethodDelete, "/api/v1/splats/"+id, h, nil, http.StatusOK); err != nil {
			return err
		}
	}
	cycling := time.Since(t0)
	conn, err := pgx.Connect(ctx, st.State.PostgresURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	// Waits while purges keep closing; gives up when none closed for purgeStall.
	var closed, last int
	for moved := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE done_at IS NOT NULL) FROM asset_purges
			WHERE owner_id = $1 AND kind = 'scene'`, owner).Scan(&closed); err != nil {
			return err
		}
		if closed >= purgeCycles {
			break
		}
		if closed != last {
			last, moved = closed, time.Now()
		}
		if time.Since(moved) > purgeStall {
			return fmt.Errorf("%d of %d purges closed, none for %s", closed, purgeCycles, purgeStall)
		}
	}
	q, err := conn.Query(ctx, `SELECT (extract(epoch FROM done_at - created_at) * 1000)::float8 FROM asset_purges
		WHERE owner_id = $1 AND kind = 'scene'`, owner)
	if err != nil {
		return err
	}
	took, err := pgx.CollectRows(q, pgx.RowTo[float64])
	if err != nil {
		return err
	}
	if len(took) == 0 {
		return errors.New("no purge recorded")
	}
	slices.Sort(took)
	rows.p50.Value = took[len(took)/2]
	rows.p99.Value = took[(len(took)*99+99)/100-1]
	note := fmt.Sprintf("%d clone-then-delete cycles of one customer, one after the other (%.1f cycles/s); slowest %.0f ms",
		len(took), float64(purgeCycles)/cycling.Seconds(), took[len(took)-1])
	rows.p50.Notes, rows.p99.Notes = note, note
	return nil
}
