//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/ratelimit"
	"github.com/splathost/splathost/internal/testenv"
)

// raceCap is the account's storage bundle in the race: small enough that commits and clones
// hit it all the time, so the cap is raced, not just approached.
const raceCap = 48 << 10

// raceCustomers are the customers the race acts for; the first has a scene cap too.
var raceCustomers = []string{"c0", "c1", "c2", "c3"}

// raceState is what the racing clients share: the scenes they know of, by owner.
type raceState struct {
	base string
	tn   tenant
	mu   sync.Mutex
	live map[string][]string // owner -> scene ids (committed, cloned, or clone jobs to be)
	st   statusCounts
	// bothWon counts double commits of one upload that both got 201.
	bothWon atomic.Int64
	// deleted counts the DELETEs answered 200.
	deleted atomic.Int64
	ops     map[string]*atomic.Int64
}

func (r *raceState) add(eu, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[eu] = append(r.live[eu], id)
}

// pick returns a random known scene of eu and removes it when take is set.
func (r *raceState) pick(eu string, take bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.live[eu]
	if len(l) == 0 {
		return ""
	}
	i := rand.IntN(len(l))
	id := l[i]
	if take {
		l[i] = l[len(l)-1]
		r.live[eu] = l[:len(l)-1]
	}
	return id
}

// call sends one request and tallies its answer.
func (r *raceState) call(method, path, eu string, h map[string]string, body any) *testenv.Response {
	if h == nil {
		h = r.tn.keys(eu)
	}
	resp, err := chaosDo(r.base, method, path, h, body)
	if err != nil {
		r.st.add(0, err)
		return nil
	}
	r.st.add(resp.Status, nil)
	return resp
}

// upload asks for a signed URL and PUTs a .splat of records×32 bytes; it returns the fileUrl.
func (r *raceState) upload(eu string, records int) string {
	data := splatBytes(records)
	up := r.call("POST", "/api/v1/uploads/splat-file", eu, nil,
		map[string]any{"fileName": "race.splat", "contentType": "application/splat", "fileSize": len(data)})
	if up == nil || up.Status != 200 {
		return ""
	}
	req, err := http.NewRequest("PUT", up.Body["uploadUrl"].(string), bytes.NewReader(data))
	if err != nil {
		return ""
	}
	for k, v := range signedPut("application/splat") {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.st.add(0, err)
		return ""
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return ""
	}
	return up.Body["fileUrl"].(string)
}

func (r *raceState) commit(eu string) {
	url := r.upload(eu, 4+rand.IntN(61))
	if url == "" {
		return
	}
	c := r.call("POST", "/api/v1/splats", eu, nil, map[string]any{"title": "race", "splatUrl": url})
	if c != nil && c.Status == 201 {
		r.add(eu, c.Body["splatId"].(string))
	}
}

// doubleCommit commits one upload twice at once: one may win, the other must not undo it.
func (r *raceState) doubleCommit(eu string) {
	url := r.upload(eu, 4+rand.IntN(61))
	if url == "" {
		return
	}
	var wg sync.WaitGroup
	var won atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := r.call("POST", "/api/v1/splats", eu, nil, map[string]any{"title": "twice", "splatUrl": url})
			if c != nil && c.Status == 201 {
				won.Add(1)
				r.add(eu, c.Body["splatId"].(string))
			}
		}()
	}
	wg.Wait()
	if won.Load() > 1 {
		r.bothWon.Add(1)
	}
}

func (r *raceState) clone(eu string) {
	id := r.pick(eu, false)
	if id == "" {
		r.commit(eu)
		return
	}
	c := r.call("POST", clonePath(id), eu, nil, nil)
	switch {
	case c == nil:
	case c.Status == 201:
		r.add(eu, c.Body["splatId"].(string))
	case c.Status == 202:
		r.add(eu, c.Body["jobId"].(string)) // the job's id becomes the scene's
	}
}

func (r *raceState) remove(eu string) {
	id := r.pick(eu, true)
	if id == "" {
		return
	}
	c := r.call("DELETE", splatPath(id), eu, nil, nil)
	switch {
	case c != nil && c.Status >= 500:
		r.add(eu, id) // may still be there
	case c != nil && c.Status == 200:
		r.deleted.Add(1)
	}
}

// TestChaosRacingCommitsClonesDeletes races commits, double commits, clones and deletes of four
// customers against a small storage cap through the split binaries, killing the scene service
// and the worker with SIGKILL mid-run (full form). Then: the caps held at every moment sampled,
// what every customer and the account are charged is the sum of their scene rows, every scene
// has its file, and after the sweeps the bucket holds no object that no scene owns.
func TestChaosRacingCommitsClonesDeletes(t *testing.T) {
	ops := chaosScale("SPLATHOST_CHAOS_OPS", 50, 1000)
	kills := chaosFull
	rep := newChaosReport(t, "racing commits/clones/deletes")
	// The race is of one integration's customers against its caps: 8 clients at full speed may
	// pass its plan's rate limit, and a 429 would only thin the race out.
	sp := chaosSplit(t, func(o *testenv.SplitOptions) { o.Config.RateLimit.APIPro = ratelimit.Limit{} })
	tn := newIntegration(t, newAccount(t, "pro", raceCap), nil)
	for i, eu := range raceCustomers {
		var caps map[string]any
		if i == 0 {
			caps = map[string]any{"maxSplats": 6}
		}
		ensureCustomer(t, tn, eu, caps)
	}
	r := &raceState{base: sp.URL, tn: tn, live: map[string][]string{}, ops: map[string]*atomic.Int64{}}
	for _, k := range []string{"commit", "double commit", "clone", "delete"} {
		r.ops[k] = &atomic.Int64{}
	}

	// The monitor samples the stored usage against the caps while everything races.
	ctx, stop := context.WithCancel(context.Background())
	var overBytes, overSlots, samples atomic.Int64
	var monitor sync.WaitGroup
	monitor.Add(1)
	go func() {
		defer monitor.Done()
		for ctx.Err() == nil {
			var acct, custOver, slotOver int64
			err := env.Process.DB.Pool.QueryRow(ctx, `SELECT
				(SELECT used_bytes FROM accounts WHERE id = $1) - (SELECT storage_bundle_bytes FROM accounts WHERE id = $1),
				coalesce((SELECT max(used_bytes - limit_bytes) FROM external_users WHERE integration_id = $2), 0),
				coalesce((SELECT max(splat_count - max_splats) FROM external_users WHERE integration_id = $2 AND max_splats IS NOT NULL), 0)`,
				tn.AccountID, tn.IntegrationID).Scan(&acct, &custOver, &slotOver)
			if err == nil {
				samples.Add(1)
				overBytes.Store(max(overBytes.Load(), acct, custOver))
				overSlots.Store(max(overSlots.Load(), slotOver))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	// The killer: SIGKILL the scene service and the worker in turn, restarting each at once, at
	// even steps of the run's progress so the kills land mid-run at any scale.
	const killSteps = 8
	var killed, finished atomic.Int64
	killDone := make(chan struct{})
	go func() {
		defer close(killDone)
		if !kills {
			return
		}
		for i := 1; i <= killSteps; i++ {
			for finished.Load() < int64(i*ops/(killSteps+1)) {
				if ctx.Err() != nil {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			name := []string{"scene", "worker"}[i%2]
			if err := sp.Kill(name); err != nil {
				t.Errorf("kill %s: %v", name, err)
				return
			}
			killed.Add(1)
			time.Sleep(300 * time.Millisecond)
			if err := sp.Start(name); err != nil {
				t.Errorf("restart %s: %v", name, err)
				return
			}
		}
	}()

	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				finished.Add(1)
				eu := raceCustomers[rand.IntN(len(raceCustomers))]
				switch n := rand.IntN(10); {
				case n == 0:
					// Point 4: a refused concurrent commit deletes the winner's file.
					r.ops["double commit"].Add(1)
					r.doubleCommit(eu)
				case n < 5:
					r.ops["commit"].Add(1)
					r.commit(eu)
				case n < 7:
					r.ops["clone"].Add(1)
					r.clone(eu)
				default:
					r.ops["delete"].Add(1)
					r.remove(eu)
				}
			}
		}()
	}
	for i := 0; i < ops; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	<-killDone
	stop()
	monitor.Wait()
	for _, n := range testenv.SplitNames {
		if sp.PID(n) == 0 {
			require.NoError(t, sp.Start(n))
		}
	}

	// Settle: every clone job closes (finished or rolled back) before the books are read.
	var jobs int
	deadline := time.Now().Add(3 * time.Minute)
	for {
		require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM clone_jobs WHERE integration_id = $1`, tn.IntegrationID).Scan(&jobs))
		if jobs == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	runSweeps(t, tn.IntegrationID)
	// A purge activity a SIGKILL interrupted is retried once its timeout has passed (a minute
	// for the object and database steps, five for the ClickHouse view deletion that closes a
	// scene's row), plus the retry backoff: wait for every purge row to close before the audit.
	var openPurges int
	purgeWait := time.Now()
	for deadline := time.Now().Add(8 * time.Minute); ; time.Sleep(time.Second) {
		require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM asset_purges WHERE integration_id = $1 AND done_at IS NULL`, tn.IntegrationID).Scan(&openPurges))
		if openPurges == 0 || time.Now().After(deadline) {
			break
		}
	}
	purgeSecs := time.Since(purgeWait).Round(time.Second).Seconds()
	st := store(t)
	var orphans, missing []string
	var objects int
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		orphans, missing, objects = objectAudit(t, st, tn.IntegrationID)
		if len(orphans) == 0 && len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	cb, cs, ab, as := usageAudit(t, tn, raceCustomers...)

	rep.info("operations", float64(ops))
	for _, k := range []string{"commit", "double commit", "clone", "delete"} {
		rep.info(k+"s", float64(r.ops[k].Load()))
	}
	rep.info("SIGKILLs (scene, worker)", float64(killed.Load()))
	rep.info("live scenes at the end", float64(len(liveScenes(t, tn.IntegrationID))))
	rep.info("objects at the end", float64(objects))
	rep.info("2xx answers", float64(r.st.count(func(s int) bool { return s < 300 })))
	rep.info("4xx answers", float64(r.st.count(func(s int) bool { return s >= 400 && s < 500 })))
	rep.info("502/503/504 answers", float64(r.st.count(func(s int) bool { return s > 500 })))
	rep.zero("500 answers", float64(r.st.count(func(s int) bool { return s == 500 })))
	rep.zero("double commits won twice", float64(r.bothWon.Load()))
	rep.info("cap samples", float64(samples.Load()))
	rep.zero("bytes above a cap (max sampled)", float64(max(0, overBytes.Load())))
	rep.zero("scenes above a cap (max sampled)", float64(max(0, overSlots.Load())))
	rep.zero("clone jobs still open", float64(jobs))
	rep.zero("customer usedBytes − Σ scenes", float64(cb))
	rep.zero("customer splat count − Σ scenes", float64(cs))
	rep.zero("account usedBytes − Σ scenes", float64(ab))
	rep.zero("account splatCount − Σ scenes", float64(as))
	rep.info("seconds until every purge closed", purgeSecs)
	rep.zero("purge rows still open", float64(openPurges))
	rep.zero("orphan objects after the sweeps", float64(len(orphans)))
	rep.zero("scenes missing their file", float64(len(missing)))
	rep.note("%d ops by 8 clients, cap %d B; answers %s", ops, raceCap, r.st.String())
	if len(orphans) > 0 {
		rep.note("first orphans: %v", orphans[:min(3, len(orphans))])
		var kinds []string
		rows, err := env.Process.DB.Pool.Query(context.Background(), `SELECT kind || ':' || count(*) || ' open:' || count(*) FILTER (WHERE done_at IS NULL)
			FROM asset_purges WHERE integration_id = $1 GROUP BY kind`, tn.IntegrationID)
		require.NoError(t, err)
		for rows.Next() {
			var k string
			require.NoError(t, rows.Scan(&k))
			kinds = append(kinds, k)
		}
		rows.Close()
		rep.note("purge rows by kind: %v; successful deletes: %d", kinds, r.deleted.Load())
		for _, k := range orphans[:min(3, len(orphans))] {
			rep.note("orphan %s: %s", k, orphanHistory(t, k))
		}
	}
	if len(missing) > 0 {
		rep.note("first scenes missing files: %v", missing[:min(3, len(missing))])
	}
	t.Log(fmt.Sprintf("race answers: %s", r.st.String()))
	rep.check()
}

// orphanHistory says what the database still knows of an orphan object's upload: its ticket
// (committed, scene, whether that scene exists) and the purge rows naming it, so a failed
// audit points at the path that leaked it.
func orphanHistory(t *testing.T, key string) string {
	t.Helper()
	ctx := context.Background()
	var out []string
	rows, err := env.Process.DB.Pool.Query(ctx, `SELECT t.id, t.committed_at IS NOT NULL, coalesce(t.scene_id, ''),
		EXISTS (SELECT 1 FROM scenes s WHERE s.id = t.scene_id), t.expires_at < now()
		FROM upload_tickets t WHERE $1 LIKE t.prefix || '%'`, key)
	require.NoError(t, err)
	for rows.Next() {
		var id, scene string
		var committed, exists, expired bool
		require.NoError(t, rows.Scan(&id, &committed, &scene, &exists, &expired))
		out = append(out, fmt.Sprintf("ticket %s committed=%v scene=%q exists=%v expired=%v", id, committed, scene, exists, expired))
	}
	rows.Close()
	if len(out) == 0 {
		out = append(out, "no ticket")
	}
	rows, err = env.Process.DB.Pool.Query(ctx, `SELECT id, kind, coalesce(scene_id, ''), done_at IS NOT NULL, coalesce(failure, ''),
		deleted_objects, created_at FROM asset_purges WHERE $1 = ANY (SELECT jsonb_array_elements_text(coalesce(keys, '[]'::jsonb)))
		OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(coalesce(prefixes, '[]'::jsonb)) p WHERE $1 LIKE p || '%')
		OR scene_id IN (SELECT scene_id FROM upload_tickets t WHERE $1 LIKE t.prefix || '%')
		OR EXISTS (SELECT 1 FROM upload_tickets t WHERE $1 LIKE t.prefix || '%' AND coalesce(ticket_ids, '[]'::jsonb) ? t.id)`, key)
	if err != nil {
		return strings.Join(out, "; ") + "; purges: " + err.Error()
	}
	for rows.Next() {
		var id, kind, scene, failure string
		var done bool
		var deleted int
		var created time.Time
		require.NoError(t, rows.Scan(&id, &kind, &scene, &done, &failure, &deleted, &created))
		out = append(out, fmt.Sprintf("purge %s kind=%s scene=%q done=%v failure=%q deleted=%d created=%s", id, kind, scene, done, failure, deleted, created.Format(time.RFC3339)))
	}
	rows.Close()
	return strings.Join(out, "; ")
}
