//go:build e2e

package e2e

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/internal/ids"
	wfcontract "github.com/splathost/splathost/workflows/contract"
)

// TestPurgeRedriveRotates: the re-drive's read offers the open outbox rows offered least
// recently first, so rows whose purges keep running (each offer finds them running) never hide
// a row whose start was lost behind them. Three rows older than any other, a batch of two: the
// second read offers the third, where oldest-first offered the first two again for ever.
func TestPurgeRedriveRotates(t *testing.T) {
	ctx := context.Background()
	a := newTenant(t)
	created := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var rows []string
	for i := range 3 {
		id := ids.New()
		_, err := env.Process.DB.Pool.Exec(ctx, `INSERT INTO asset_purges (id, created_at, updated_at, kind, integration_id,
			owner_id, external_user_id) VALUES ($1, $2, now(), 'upload', $3, $4, 'rotating')`,
			id, created.Add(time.Duration(i)*time.Minute), a.IntegrationID, ids.New())
		require.NoError(t, err)
		rows = append(rows, id)
	}
	t.Cleanup(func() {
		_, _ = env.Process.DB.Pool.Exec(ctx, `UPDATE asset_purges SET done_at = now() WHERE id = ANY($1)`, rows)
	})
	acts := &activities.Activities{Ent: env.Process.DB.Ent}
	// Only rows older than 2000-01-01 01:00: these three.
	in := wfcontract.PendingPurgesInput{MinAge: time.Since(created.Add(time.Hour)), Limit: 2}
	offered := func() []string {
		res, err := acts.PendingPurges(ctx, in)
		require.NoError(t, err)
		var out []string
		for _, p := range res.Purges {
			require.Equal(t, a.IntegrationID, p.IntegrationID)
			require.Equal(t, "upload", p.Kind)
			out = append(out, p.PurgeID)
		}
		return out
	}
	requireRotates(t, rows, offered)
}

// requireRotates checks three reads of a re-drive outbox (batches of two) holding the three
// rows, oldest first, and nothing else: never offered first, oldest first; then the one never
// offered and the oldest offer; then round again.
func requireRotates(t *testing.T, rows []string, read func() []string) {
	t.Helper()
	set := func(ids ...string) []string {
		sort.Strings(ids)
		return ids
	}
	require.Equal(t, set(rows[0], rows[1]), set(read()...), "never offered, oldest first")
	require.Equal(t, set(rows[2], rows[0]), set(read()...), "the row never offered, then the oldest offer")
	require.Equal(t, set(rows[1], rows[0]), set(read()...), "and round again")
}

// TestRenditionRedriveRotates: the rendition re-drive's read offers the pending scenes started or
// offered least recently first, as the purge re-drive does, so scenes whose conversions run long
// never hide one whose start was lost. Three scenes pending since before any other (on a
// media queue nobody polls, so no dispatcher takes them), a batch of two: the second read
// offers the third, where oldest-first offered the first two again for ever.
func TestRenditionRedriveRotates(t *testing.T) {
	ctx := context.Background()
	a := newTenant(t)
	ensureCustomer(t, a, "rotating", nil)
	changed := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var scenes []string
	for i := range 3 {
		id := newScene(t, a, "rotating", 20)["id"].(string)
		updateScene(t, id, `processing_state = 'pending', rendition_queue = 'nobody-polls', rendition_started_at = NULL, updated_at = $2`,
			changed.Add(time.Duration(i)*time.Minute))
		scenes = append(scenes, id)
	}
	t.Cleanup(func() {
		_, _ = env.Process.DB.Pool.Exec(ctx, `UPDATE scenes SET processing_state = 'skipped' WHERE id = ANY($1)`, scenes)
	})
	acts := &activities.Activities{Ent: env.Process.DB.Ent}
	// Only scenes unchanged since 2000-01-01 01:00: these three.
	in := wfcontract.PendingRenditionsInput{MinAge: time.Since(changed.Add(time.Hour)), Limit: 2}
	offered := func() []string {
		res, err := acts.PendingRenditions(ctx, in)
		require.NoError(t, err)
		var out []string
		for _, p := range res.Scenes {
			require.Equal(t, a.IntegrationID, p.IntegrationID)
			require.Equal(t, "rotating", p.ExternalUserID)
			out = append(out, p.SceneID)
		}
		return out
	}
	requireRotates(t, scenes, offered)
}
