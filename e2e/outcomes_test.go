//go:build e2e

package e2e

// Answers that tell the truth under faults (issue 27): a request against a hung store answers a
// final failure and never completes afterwards; a keyed request's outcome survives the death of
// the gateway or the service that ran it.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/restclient"
	"github.com/splathost/splathost/internal/testenv"
)

// budgetSplit runs the split binaries (chaosSplit) with a short request budget: a hung store
// is felt after budget, not 45 s.
func budgetSplit(t *testing.T, budget time.Duration) *testenv.Split {
	t.Helper()
	return chaosSplit(t, func(o *testenv.SplitOptions) { o.Config.RequestBudget, o.Config.CloneWait = budget, budget/4 })
}

// pauseStore hangs the stack's object store (SIGSTOP) until the returned resume is called
// (also at the end of the test, whatever happens).
func pauseStore(t *testing.T) (resume func()) {
	t.Helper()
	require.NoError(t, env.PauseEngine("versitygw"))
	done := false
	resume = func() {
		if !done {
			done = true
			require.NoError(t, env.ResumeEngine("versitygw"))
		}
	}
	t.Cleanup(resume)
	return resume
}

// restartSplit starts a killed child again once its process is gone.
func restartSplit(t *testing.T, sp *testenv.Split, name string) {
	t.Helper()
	require.Eventually(t, func() bool { return sp.Start(name) == nil }, 30*time.Second, 50*time.Millisecond)
}

// sceneCount is how many live scenes eu of tn has.
func sceneCount(t *testing.T, tn tenant, eu string) int {
	t.Helper()
	var n int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM scenes s
		JOIN external_users u ON u.id = s.owner_id WHERE u.integration_id = $1 AND u.external_user_id = $2
		AND s.archived_at IS NULL`, tn.IntegrationID, eu).Scan(&n))
	return n
}

// TestCommitAgainstHungStoreIsFinal: a commit whose store hangs answers 503 UNAVAILABLE within its
// budget and changes nothing, not even after the store resumes; the retry the answer asks for
// creates the one scene, charged once. Before: 502 "retry with backoff" after 60 s, then the
// commit completed anyway when the store came back, and the retry made a second scene.
func TestCommitAgainstHungStoreIsFinal(t *testing.T) {
	sp := budgetSplit(t, 3*time.Second)
	a := newTenant(t)
	ensureCustomer(t, a, "hung", nil)
	body := fmt.Sprintf(`{"title":"hung store","splatUrl":%q}`, uploadSplat(t, a, "hung", splatBytes(64)))
	key := idemKey(t)

	resume := pauseStore(t)
	start := time.Now()
	// A fault, not an answer of the document: sent past the OpenAPI recorder.
	r, err := restclient.Do(sp.URL, "POST", "/api/v1/splats", withKey(a.keys("hung"), key), body)
	took := time.Since(start)
	require.NoError(t, err)
	requireEnvelope(t, r, 503)
	require.Equal(t, apperr.CodeUnavailable, r.Body["code"], string(r.Raw))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Less(t, took, 15*time.Second, "the answer comes at the budget, not at the gateway's 60 s")
	// The store comes back: whatever the request started must not complete now.
	time.Sleep(time.Second)
	resume()
	time.Sleep(3 * time.Second)
	require.Equal(t, 0, sceneCount(t, a, "hung"), "a commit that answered 503 made a scene after the store resumed")
	used, scenes := usageOf(t, a, "hung")
	require.Zero(t, scenes)
	require.Zero(t, used)

	// The retry, as the answer says: one scene, charged once; a further retry replays it.
	first := do(t, "POST", "/api/v1/splats", withKey(a.keys("hung"), key), body)
	require.Equal(t, 201, first.Status, string(first.Raw))
	require.Empty(t, first.Header.Get(idempotency.ReplayedHeader), "the 503 was not kept")
	requireReplay(t, first, do(t, "POST", "/api/v1/splats", withKey(a.keys("hung"), key), body))
	require.Equal(t, 1, sceneCount(t, a, "hung"))
	_, scenes = usageOf(t, a, "hung")
	require.Equal(t, int64(1), scenes)
}

// keyedCommitInFlight sets up a customer eu of a new tenant with one upload, hangs the store and
// sends a keyed commit of it through sp's gateway; it returns once the commit is held inside the
// scene service (sealing its upload), with the commit's answer (nil: the connection was lost)
// to come on the channel.
func keyedCommitInFlight(t *testing.T, sp *testenv.Split, eu string) (a tenant, key, body string, answer <-chan *testenv.Response, resume func()) {
	t.Helper()
	a = newTenant(t)
	ensureCustomer(t, a, eu, nil)
	body = fmt.Sprintf(`{"title":"in flight","splatUrl":%q}`, uploadSplat(t, a, eu, splatBytes(64)))
	key = idemKey(t)
	resume = pauseStore(t)
	ch := make(chan *testenv.Response, 1)
	go func() {
		r, err := restclient.Do(sp.URL, "POST", "/api/v1/splats", withKey(a.keys(eu), key), body)
		if err != nil {
			r = nil
		}
		ch <- r
	}()
	// The request has reached the scene service once the gateway holds the key.
	require.Eventually(t, func() bool { return keyHeld(t, a, key) }, 10*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	return a, key, body, ch, resume
}

// TestKeyedCommitReplaysAfterGatewayKill: the gateway dies (kill -9) while the scene service is
// committing; the commit completes and records its answer with its effect, so the client's retry
// through a new gateway gets that answer with Idempotent-Replayed, not 409 IN_USE for minutes and
// then "already part of a scene". A retry that lands while the commit still runs is told IN_USE.
func TestKeyedCommitReplaysAfterGatewayKill(t *testing.T) {
	sp := budgetSplit(t, 20*time.Second)
	a, key, body, lost, resume := keyedCommitInFlight(t, sp, "gwkill")
	require.NoError(t, sp.Kill("gateway"))
	require.Nil(t, <-lost, "the client lost its connection with the gateway")
	// The store comes back (a gateway is ready only once the services' stores answer) and the
	// commit, still running in the scene service, completes with no gateway to answer.
	resume()
	restartSplit(t, sp, "gateway")

	r := retryWhileInUse(t, sp.URL, "POST", "/api/v1/splats", withKey(a.keys("gwkill"), key), body)
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.Equal(t, "true", r.Header.Get(idempotency.ReplayedHeader), "the first answer, recorded with the commit")
	require.Equal(t, 1, sceneCount(t, a, "gwkill"))
	ids, _ := listPage(t, a, "gwkill", "")
	require.Equal(t, []string{r.Body["splatId"].(string)}, ids)
	_, scenes := usageOf(t, a, "gwkill")
	require.Equal(t, int64(1), scenes)
}

// TestKeyedCommitAfterServiceKillRunsOnce: the scene service dies (kill -9) in the middle of a
// keyed commit. The gateway's answer is final: its transaction can no longer commit (the claim
// is settled), so the 5xx is not kept and the retry commits exactly once.
func TestKeyedCommitAfterServiceKillRunsOnce(t *testing.T) {
	sp := budgetSplit(t, 20*time.Second)
	a, key, body, answer, resume := keyedCommitInFlight(t, sp, "svckill")
	require.NoError(t, sp.Kill("scene"))
	r := <-answer
	require.NotNil(t, r)
	requireEnvelope(t, r, 502)
	require.Contains(t, r.Body["message"], "nothing was changed", "settled: the unknown outcome is known")
	resume()
	restartSplit(t, sp, "scene")
	require.False(t, keyHeld(t, a, key), "a 5xx is not kept")
	require.Equal(t, 0, sceneCount(t, a, "svckill"))

	first := do(t, "POST", "/api/v1/splats", withKey(a.keys("svckill"), key), body)
	require.Equal(t, 201, first.Status, string(first.Raw))
	require.Empty(t, first.Header.Get(idempotency.ReplayedHeader))
	requireReplay(t, first, do(t, "POST", "/api/v1/splats", withKey(a.keys("svckill"), key), body))
	require.Equal(t, 1, sceneCount(t, a, "svckill"))
}

// keyHeld reports whether an idempotency key of tn named key binds: running under a claim or
// answered (a key released after a 5xx binds nothing).
func keyHeld(t *testing.T, tn tenant, key string) bool {
	t.Helper()
	var n int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM idempotency_keys WHERE integration_id = $1 AND key = $2 AND (status <> 0 OR lease <> '')`,
		tn.IntegrationID, key).Scan(&n))
	return n > 0
}

// TestKeyedCloneSurvivesProcessDeath: the scene service dies (kill -9) while a keyed clone waits
// for its job, so no answer was recorded. Either the gateway lives and settles the key (502,
// released), or it dies too (the one-process deployment's kill -9) and the key waits out its
// lease. Either way the retry runs again and finds the job the first attempt started (its scene
// id comes from the key and the key's first claim, which a release keeps), answering for it: one
// clone, not a second job or a 429. Before: 429 CLONE_IN_PROGRESS, or a second clone once the
// first had finished (seen: 3 scenes).
func TestKeyedCloneSurvivesProcessDeath(t *testing.T) {
	for name, kill := range map[string][]string{"scene": {"scene"}, "scene and gateway": {"scene", "gateway"}} {
		t.Run(name, func(t *testing.T) {
			sp := budgetSplit(t, 20*time.Second)
			a := newTenant(t)
			src := newScene(t, a, "clonekill", 4)
			key := idemKey(t)
			path := clonePath(src["id"].(string))

			resume := pauseStore(t) // the job's copy hangs, so the request waits its whole CloneWait
			answer := make(chan *testenv.Response, 1)
			go func() {
				r, _ := restclient.Do(sp.URL, "POST", path, withKey(a.keys("clonekill"), key), nil)
				answer <- r
			}()
			require.Eventually(t, func() bool { return keyHeld(t, a, key) }, 10*time.Second, 20*time.Millisecond)
			time.Sleep(time.Second)
			for _, n := range kill {
				require.NoError(t, sp.Kill(n))
			}
			if r := <-answer; len(kill) == 1 {
				require.NotNil(t, r)
				requireEnvelope(t, r, 502) // settled: the job may run, the key is free for the retry
			}
			resume()
			for _, n := range kill {
				restartSplit(t, sp, n)
			}

			r := retryWhileInUse(t, sp.URL, "POST", path, withKey(a.keys("clonekill"), key), nil)
			require.Contains(t, []int{201, 202}, r.Status, string(r.Raw))
			if r.Status == 202 {
				done, _ := pollClone(t, a, "clonekill", src["id"].(string), r.Body["jobId"].(string))
				require.Equal(t, 200, done.Status, string(done.Raw))
			}
			requireReplay(t, r, do(t, "POST", path, withKey(a.keys("clonekill"), key), nil))
			require.Equal(t, 2, sceneCount(t, a, "clonekill"), "the source and one clone")
		})
	}
}

// retryWhileInUse sends a keyed request until it is no longer answered 409 IN_USE (at most a
// lease and a budget).
func retryWhileInUse(t *testing.T, base, method, path string, h map[string]string, body any) *testenv.Response {
	t.Helper()
	deadline := time.Now().Add(idempotency.Lease + 25*time.Second)
	for {
		r, err := restclient.Do(base, method, path, h, body)
		require.NoError(t, err)
		if r.Status != 409 || r.Body["code"] != idempotency.CodeInUse || time.Now().After(deadline) {
			return r
		}
		time.Sleep(200 * time.Millisecond)
	}
}
