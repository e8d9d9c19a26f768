//go:build e2e

package e2e

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/temporalconn"
	"github.com/splathost/splathost/internal/testenv"
)

// TestClusterTemporalIsMultiProcess checks, against the cluster shape, that Temporal really runs
// as separate processes on Postgres: stack.json lists every role's node; the temporal database
// on the primary holds the 8 history shards and a live membership row per node; the product's
// client takes every frontend and reaches Temporal through the second when the first refuses;
// and a clone still completes after temporal-history-1 and temporal-frontend-1 are killed
// with SIGKILL (the other history host takes the shards over, the runner restarts the node).
func TestClusterTemporalIsMultiProcess(t *testing.T) {
	if !env.State.Cluster {
		t.Skipf("not the cluster shape: set %s=1", testenv.ClusterEnv)
	}
	names := map[string]bool{}
	for _, p := range env.State.Processes {
		names[p.Name] = true
	}
	nodes := []string{"temporal-frontend-1", "temporal-frontend-2", "temporal-history-1", "temporal-history-2",
		"temporal-matching-1", "temporal-worker-1", "zookeeper-1", "zookeeper-2", "zookeeper-3"}
	for _, want := range nodes {
		require.True(t, names[want], "stack.json lists %s", want)
	}
	require.False(t, names["temporal"], "no all-roles node in the cluster shape")
	require.Len(t, env.State.TemporalAddrs, 2)
	require.Equal(t, env.State.TemporalAddr, env.State.TemporalAddrs[0])
	require.Equal(t, strings.Join(env.State.TemporalAddrs, ","), env.Config.TemporalAddr, "the product gets both frontends")

	ctx := context.Background()
	t.Run("postgres persistence and membership", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, strings.Replace(env.State.PostgresURL, "/splathost?", "/temporal?", 1))
		require.NoError(t, err)
		defer conn.Close(ctx)
		var shards int
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM shards").Scan(&shards))
		require.Equal(t, 8, shards)
		require.Eventually(t, func() bool {
			var live int
			err := conn.QueryRow(ctx, "SELECT count(DISTINCT rpc_port) FROM cluster_membership WHERE last_heartbeat > now() AT TIME ZONE 'UTC' - interval '30 seconds'").Scan(&live)
			return err == nil && live >= 6
		}, 30*time.Second, 500*time.Millisecond, "every node heartbeats into cluster_membership")
	})

	t.Run("frontend list", func(t *testing.T) {
		cfg := env.Config
		cfg.TemporalAddr = closedAddr(t) + "," + env.State.TemporalAddrs[1]
		c, err := temporalconn.Dial(cfg, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		defer c.Close()
		for range 5 {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := c.CheckHealth(cctx, &client.CheckHealthRequest{})
			cancel()
			require.NoError(t, err, "calls go to the frontend that answers")
		}
	})

	t.Run("clone across node kills", func(t *testing.T) {
		a := newTenant(t)
		src := lodScene(t, a, "parks", 200)
		for _, node := range []string{"temporal-history-1", "temporal-frontend-1"} {
			took, err := env.KillEngine(node)
			require.NoError(t, err)
			t.Logf("%s killed and back in %s", node, took)
		}
		id := cloneNow(t, a, "parks", src["id"].(string))
		require.Equal(t, 200, do(t, "GET", splatPath(id), a.keys("parks"), nil).Status)
	})
}
