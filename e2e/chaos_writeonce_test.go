//go:build e2e

package e2e

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
)

// TestChaosWriteOnceUploads (issue 26, point 1) attacks every committed scene through the upload
// URLs its own uploads were given, as a stranger holding them would: other bytes of the same size
// after the commit, and again after the scene's delete. Promises: the served bytes never change,
// and after the sweeps the bucket holds nothing outside live scenes and open tickets.
func TestChaosWriteOnceUploads(t *testing.T) {
	rep := newChaosReport(t, "write-once uploads")
	a := newTenant(t)
	const eu = "vandalised"
	ensureCustomer(t, a, eu, nil)
	n := chaosScale("SPLATHOST_CHAOS_WRITE_ONCE", 12, 200)

	type victim struct {
		id, uploadURL, served string
		data                  []byte
	}
	victims := make([]victim, n)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				data := fixtures.PLY(50 + i)
				uploadURL, fileURL := putFile(t, a, eu, "scene.ply", "application/ply", data)
				r := do(t, "POST", "/api/v1/splats", a.keys(eu), map[string]any{"title": "victim",
					"splatUrl": fileURL, "visibility": "public"})
				require.Equal(t, 201, r.Status, string(r.Raw))
				victims[i] = victim{id: r.Body["splatId"].(string), uploadURL: uploadURL,
					served: splatOf(r)["splatUrl"].(string), data: data}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()

	var accepted, changed, recreated, servedAfterDelete atomic.Int64
	attack := func(v victim) int {
		status := putUpload(t, v.uploadURL, vandal(len(v.data)), signedPut("application/ply"))
		if status == 200 {
			accepted.Add(1)
		}
		return status
	}
	for _, v := range victims {
		attack(v)
		if got := fetchAsset(t, "GET", v.served, nil); got.status != 200 || !bytes.Equal(got.body, v.data) {
			changed.Add(1)
		}
	}
	// Delete every other scene, wait for its purge, and attack its URL again.
	var deleted []victim
	for i, v := range victims {
		if i%2 == 0 {
			require.Equal(t, 200, do(t, "DELETE", splatPath(v.id), a.keys(eu), nil).Status)
			deleted = append(deleted, v)
		}
	}
	require.Eventually(t, func() bool {
		var open int
		require.NoError(t, env.Process.DB.Pool.QueryRow(t.Context(),
			`SELECT count(*) FROM asset_purges WHERE integration_id = $1 AND done_at IS NULL`, a.IntegrationID).Scan(&open))
		return open == 0
	}, 2*time.Minute, 200*time.Millisecond, "the deletes' purges close")
	for _, v := range deleted {
		if attack(v) == 200 {
			recreated.Add(1)
		}
		if fetchAsset(t, "GET", v.served, nil).status != 404 {
			servedAfterDelete.Add(1)
		}
	}
	for _, v := range victims {
		if fetchAsset(t, "GET", v.served, nil).status == 200 {
			if got := fetchAsset(t, "GET", v.served, nil); !bytes.Equal(got.body, v.data) {
				changed.Add(1)
			}
		}
	}
	res := sweepBucket(t)
	orphans, missing, objects := objectAudit(t, store(t), a.IntegrationID)

	rep.info("scenes attacked", float64(n))
	rep.info("re-PUTs the store accepted", float64(accepted.Load()))
	rep.info("objects a re-PUT recreated after delete", float64(recreated.Load()))
	rep.info("strays the bucket sweep removed", float64(res.Strays))
	rep.info("objects audited", float64(objects))
	rep.zero("served bytes changed", float64(changed.Load()))
	rep.zero("deleted scenes served", float64(servedAfterDelete.Load()))
	rep.zero("objects outside live scenes and open tickets", float64(len(orphans)))
	rep.zero("scenes missing their file", float64(len(missing)))
	if len(orphans) > 0 {
		rep.note("first orphan: %s", orphans[0])
	}
	rep.check()
}
