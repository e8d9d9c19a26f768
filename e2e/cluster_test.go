//go:build e2e

package e2e

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/analytics"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
)

// TestClusterShape checks, against the cluster shape of the stack (SPLATHOST_E2E_CLUSTER=1),
// that its nodes do what their names say: the state lists every node by role; a scene's views
// sent through the API land on exactly one ClickHouse shard (sharded by scene) and on both of
// its replicas, and every node reads them all through the Distributed table; the Postgres
// standby streams what the primary commits and refuses writes; an object written through one
// versitygw gateway is read through the other.
func TestClusterShape(t *testing.T) {
	if !env.State.Cluster {
		t.Skipf("not the cluster shape: set %s=1", testenv.ClusterEnv)
	}
	names := map[string]bool{}
	for _, p := range env.State.Processes {
		names[p.Name] = true
	}
	for _, want := range []string{"postgres-primary", "postgres-standby", "zookeeper-1", "zookeeper-2", "zookeeper-3", "clickhouse-1-1",
		"clickhouse-1-2", "clickhouse-2-1", "clickhouse-2-2", "versitygw-1", "versitygw-2"} {
		require.True(t, names[want], "stack.json lists %s", want)
	}
	require.Len(t, env.State.ClickHouseAddrs, 4, "2 shards x 2 replicas")
	require.Len(t, env.State.ObjectStoreURLs, 2)
	ctx := context.Background()

	tn := newTenant(t)
	t.Run("standby", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, env.State.PostgresStandbyURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		require.Eventually(t, func() bool {
			var n int
			err := conn.QueryRow(ctx, "SELECT count(*) FROM integrations WHERE id = $1", tn.IntegrationID).Scan(&n)
			return err == nil && n == 1
		}, 10*time.Second, 50*time.Millisecond, "the standby has the integration the primary just committed")
		_, err = conn.Exec(ctx, "DELETE FROM integrations WHERE id = $1", tn.IntegrationID)
		require.ErrorContains(t, err, "read-only transaction")
	})

	t.Run("clickhouse", func(t *testing.T) {
		id := publicScene(t, tn, "ada")
		tok := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": id})
		const n = 5
		for i := range n {
			view(t, tok, id, "cluster-visitor-"+string(rune('a'+i)))
		}
		require.Eventually(t, func() bool { return viewCount(t, tn, id) == n }, eventuallyWait, 200*time.Millisecond)
		db := env.State.ClickHouseDB
		count := func(addr, table string) uint64 {
			conn, err := analytics.Open(ctx, addr, db)
			require.NoError(t, err)
			defer conn.Close()
			var c uint64
			require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM "+db+"."+table+" WHERE scene_id = ?", id).Scan(&c))
			return c
		}
		addrs := env.State.ClickHouseAddrs
		// Replicas fetch each other's parts asynchronously: wait for both of each shard.
		var shards [2]uint64
		require.Eventually(t, func() bool {
			for s := range shards {
				a, b := count(addrs[2*s], analytics.EventsTable+analytics.LocalSuffix), count(addrs[2*s+1], analytics.EventsTable+analytics.LocalSuffix)
				if a != b {
					return false
				}
				shards[s] = a
			}
			return true
		}, 10*time.Second, 100*time.Millisecond, "both replicas of each shard hold the same events")
		require.ElementsMatch(t, []uint64{0, n}, shards[:], "all the scene's events on one shard")
		for _, addr := range addrs {
			require.Equal(t, uint64(n), count(addr, analytics.EventsTable), "%s reads every shard through the Distributed table", addr)
		}
	})

	t.Run("clickhouse address list", func(t *testing.T) {
		// The product gets every node; a node that refuses connections is skipped for the next.
		require.Equal(t, strings.Join(env.State.ClickHouseAddrs, ","), env.Config.ClickHouseAddr)
		conn, err := analytics.Open(ctx, closedAddr(t)+","+env.State.ClickHouseAddrs[3], env.State.ClickHouseDB)
		require.NoError(t, err)
		defer conn.Close()
		var replica string
		require.NoError(t, conn.QueryRow(ctx, "SELECT substitution FROM system.macros WHERE macro = 'replica'").Scan(&replica))
		require.Equal(t, "clickhouse-2-2", replica, "the connection skipped the closed port for the next node")
	})

	t.Run("versitygw", func(t *testing.T) {
		cfg1, cfg2 := env.Config, env.Config
		cfg1.S3Endpoint, cfg2.S3Endpoint = env.State.ObjectStoreURLs[0], env.State.ObjectStoreURLs[1]
		gw1, err := objectstore.New(cfg1)
		require.NoError(t, err)
		gw2, err := objectstore.New(cfg2)
		require.NoError(t, err)
		key := "cluster-test/" + tn.IntegrationID
		_, err = gw1.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(gw1.Bucket), Key: aws.String(key),
			Body: strings.NewReader("through versitygw-1")})
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = gw2.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(gw2.Bucket), Key: aws.String(key)})
		})
		out, err := gw2.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(gw2.Bucket), Key: aws.String(key)})
		require.NoError(t, err)
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		require.NoError(t, err)
		require.Equal(t, "through versitygw-1", string(b))

		// The product's client has versitygw-2 as its fallback; with an endpoint that refuses,
		// its requests (signed for the endpoint's host) are served by versitygw-2.
		require.Equal(t, strings.TrimPrefix(env.State.ObjectStoreURLs[1], "http://"), env.Config.S3Fallbacks)
		refused := env.Config
		refused.S3Endpoint = "http://" + closedAddr(t)
		fb, err := objectstore.New(refused)
		require.NoError(t, err)
		out, err = fb.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(fb.Bucket), Key: aws.String(key)})
		require.NoError(t, err, "versitygw-2 accepts a request signed for another gateway's host")
		b, err = io.ReadAll(out.Body)
		out.Body.Close()
		require.NoError(t, err)
		require.Equal(t, "through versitygw-1", string(b))
	})
}

// TestClusterRetentionDropsEveryShardsMonths: on the cluster shape, the view-retention
// workflow drops an expired month that only the second shard holds: the product's connection is
// to a node of the first shard, whose system.parts lists its own shard's parts only. Scenes are
// added, each in an earlier expired month, until one month lands on the second shard alone.
func TestClusterRetentionDropsEveryShardsMonths(t *testing.T) {
	if !env.State.Cluster {
		t.Skipf("not the cluster shape: set %s=1", testenv.ClusterEnv)
	}
	ctx := context.Background()
	tn := newTenant(t)
	cutoff := time.Now().UTC().AddDate(0, 0, -workflows.ViewRetentionDays)
	expired := time.Date(cutoff.Year(), cutoff.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 14)
	db, addrs := env.State.ClickHouseDB, env.State.ClickHouseAddrs
	// rows counts, on each node, the integration's events of a month the node holds itself.
	rows := func(month string) (n [4]uint64) {
		for i, addr := range addrs {
			conn, err := analytics.Open(ctx, addr, db)
			require.NoError(t, err)
			require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM "+db+"."+analytics.EventsTable+analytics.LocalSuffix+
				" WHERE integration_id = ? AND toYYYYMM(viewed_at) = toUInt32(?)", tn.IntegrationID, month).Scan(&n[i]))
			conn.Close()
		}
		return n
	}
	var month string
	for i := 0; month == ""; i++ {
		require.Less(t, i, 40, "40 scenes all hashed to the first shard")
		at := expired.AddDate(0, -i, 0)
		insertEvents(t, tn.IntegrationID, publicScene(t, tn, "ada"), at, "old")
		var n [4]uint64
		require.Eventually(t, func() bool {
			n = rows(at.Format("200601"))
			return (n[0] > 0 && n[1] > 0) || (n[2] > 0 && n[3] > 0)
		}, 10*time.Second, 100*time.Millisecond, "both replicas of the shard get the events")
		if n[0] == 0 && n[1] == 0 {
			month = at.Format("200601")
		}
	}

	ctx, cancel := context.WithTimeout(ctx, eventuallyWait)
	defer cancel()
	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, startOptions("view-retention-cluster-"+tn.IntegrationID),
		workflows.DropExpiredViews, workflows.ViewRetentionInput{})
	require.NoError(t, err)
	var res workflows.ViewRetentionResult
	require.NoError(t, run.Get(ctx, &res))
	require.Contains(t, res.Dropped, analytics.EventsTable+":"+month)
	// The drop runs ON CLUSTER; replicas apply it from the replication log.
	require.Eventually(t, func() bool { return rows(month) == [4]uint64{} }, 10*time.Second, 100*time.Millisecond,
		"no node holds events of %s any more", month)
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
