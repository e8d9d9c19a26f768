//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/db"
)

// awaitStandby waits until the hot standby (cluster shape) has replayed everything the primary
// had written when it was called: a test that writes and then reads trending, whose reads the
// standby serves, reads after its own write only then. Without a standby it returns at once.
func awaitStandby(t *testing.T) {
	t.Helper()
	if env.State.PostgresStandbyURL == "" {
		return
	}
	ctx := context.Background()
	primary, err := pgx.Connect(ctx, env.State.PostgresURL)
	require.NoError(t, err)
	defer primary.Close(ctx)
	var target string
	require.NoError(t, primary.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&target))
	conn, err := pgx.Connect(ctx, env.State.PostgresStandbyURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.Eventually(t, func() bool {
		var done bool
		err := conn.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", target).Scan(&done)
		return err == nil && done
	}, 10*time.Second, 10*time.Millisecond, "the standby replays the primary's WAL")
}

// TestStandbyReads: trending's eligibility and backfill reads go to the hot standby (they
// promise no read-your-writes), and only while it keeps up; what an integrator reads right after
// writing it (GET after PATCH, the list) stays on the primary. On the cluster shape the standby's
// replay is paused under a PATCH: trending still shows the pre-PATCH scene (served by the
// standby, which alone still has it), the scene read and the list show the change (the
// primary), and once the standby is more than SPLATHOST_POSTGRES_READ_MAX_LAG behind, trending
// goes back to the primary. On one Postgres trending sees the change at once.
func TestStandbyReads(t *testing.T) {
	tn := newTenant(t)
	trendingHas := func(id string) bool {
		// Not trendingOf, which waits for the standby to catch up.
		r := do(t, "GET", "/api/v1/splats/trending?limit=100", tn.keys(""), nil)
		require.Equal(t, 200, r.Status, string(r.Raw))
		ids, _, _ := trendingIDs(r.Body)
		for _, got := range ids {
			if got == id {
				return true
			}
		}
		return false
	}
	// readsAfterWrite are the reads an integrator makes right after hiding id from embeds.
	readsAfterWrite := func(id string) {
		r := do(t, "GET", splatPath(id), tn.keys("ada"), nil)
		require.Equal(t, 200, r.Status, string(r.Raw))
		require.Equal(t, false, r.Body["splat"].(map[string]any)["allowEmbed"], "GET after PATCH reads the primary")
		r = do(t, "GET", "/api/v1/splats?limit=100", tn.keys("ada"), nil)
		require.Equal(t, 200, r.Status, string(r.Raw))
		found := false
		for _, it := range r.Body["splats"].([]any) {
			if m := it.(map[string]any); m["id"] == id {
				found = true
				require.Equal(t, false, m["allowEmbed"], "the list after PATCH reads the primary")
			}
		}
		require.True(t, found, "the list holds the scene")
	}

	if env.State.PostgresStandbyURL == "" {
		id := publicScene(t, tn, "ada")
		require.True(t, trendingHas(id))
		patchSplat(t, tn, "ada", id, map[string]any{"allowEmbed": false})
		readsAfterWrite(id)
		require.False(t, trendingHas(id), "one Postgres: trending reads the primary")
		return
	}

	ctx := context.Background()
	standby, err := pgx.Connect(ctx, env.State.PostgresStandbyURL)
	require.NoError(t, err)
	defer standby.Close(ctx)
	resume := func() { _, _ = standby.Exec(ctx, "SELECT pg_wal_replay_resume()") }
	t.Cleanup(resume)
	maxLag := env.Config.PostgresReadMaxLag

	// A loaded machine may take longer than the lag bound between the pause and the trending
	// read; then the standby is rightly not used, and the round is run again.
	for attempt := 1; ; attempt++ {
		id := publicScene(t, tn, "ada")
		awaitStandby(t)
		require.Eventually(t, func() bool { return trendingHas(id) }, 10*time.Second, 50*time.Millisecond)
		// The first read through the standby pool starts its watcher, which connects as
		// splathost-read; reads use the standby once its first check passed, moments later.
		require.Eventually(t, func() bool {
			var n int
			err := standby.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", db.ReadApplicationName).Scan(&n)
			return err == nil && n > 0
		}, 10*time.Second, 50*time.Millisecond, "the product reads from the standby")
		_, err = standby.Exec(ctx, "SELECT pg_wal_replay_pause()")
		require.NoError(t, err)
		paused := time.Now()
		patchSplat(t, tn, "ada", id, map[string]any{"allowEmbed": false})
		readsAfterWrite(id)
		stale := trendingHas(id)
		if took := time.Since(paused); took > maxLag/2 && attempt < 3 {
			t.Logf("attempt %d: the reads took %s (lag bound %s); again", attempt, took, maxLag)
			resume()
			continue
		}
		require.True(t, stale, "trending was served by the paused standby, which still has the scene embeddable")

		// Past the lag bound the standby is not used: trending reads the primary.
		require.Eventually(t, func() bool { return !trendingHas(id) }, maxLag+5*time.Second, 100*time.Millisecond,
			"a standby more than %s behind serves no reads", maxLag)
		require.Less(t, time.Since(paused), maxLag+5*time.Second)
		resume()
		awaitStandby(t)
		require.False(t, trendingHas(id), "the caught-up standby has the change")
		return
	}
}
