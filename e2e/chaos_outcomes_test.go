//go:build e2e

package e2e

// Chaos rows of issue 27: what clients are told when the store hangs under commits, and when the
// gateway is killed under keyed commits. Every client commits with an Idempotency-Key and
// retries as the answers say (5xx, 409 IN_USE, a lost connection: same key, with backoff) until a
// final answer; the case counts what it was told and what exists afterwards.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/restclient"
	"github.com/splathost/splathost/internal/testenv"
)

// keyedCommits is the client side of both cases: clients×perClient uploads made first (the
// store must answer them), then committed, each under its own key and retried until final.
type keyedCommits struct {
	t        *testing.T
	tn       tenant
	base     func() string
	st       statusCounts
	mu       sync.Mutex
	acked    map[string]string // key -> splatId of its 201
	refused  map[string]string // key -> final 4xx body
	inUseFor time.Duration     // longest stretch one key answered IN_USE
	replays  atomic.Int64
	retries  atomic.Int64
	slowest  time.Duration // longest single answer
	pace     time.Duration // pause between one client's commits (keeps the load up during faults)
	uploads  [][]string    // per client: commit bodies
	keys     [][]string
	eus      []string
}

func newKeyedCommits(t *testing.T, base func() string, clients, perClient int) *keyedCommits {
	k := &keyedCommits{t: t, tn: newTenant(t), base: base, acked: map[string]string{}, refused: map[string]string{}}
	for c := range clients {
		eu := fmt.Sprintf("keyed-%d", c)
		ensureCustomer(t, k.tn, eu, nil)
		k.eus = append(k.eus, eu)
		var bodies, keys []string
		for i := range perClient {
			bodies = append(bodies, fmt.Sprintf(`{"title":"keyed %d/%d","splatUrl":%q}`, c, i, parkUpload(t, k.tn, eu, splatBytes(64))))
			keys = append(keys, idemKey(t))
		}
		k.uploads, k.keys = append(k.uploads, bodies), append(k.keys, keys)
	}
	return k
}

// run commits every upload, clients at once, until each has a final answer or giveUp passes.
func (k *keyedCommits) run(giveUp time.Duration) {
	var wg sync.WaitGroup
	end := time.Now().Add(giveUp)
	for c := range k.eus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, body := range k.uploads[c] {
				k.commit(k.eus[c], k.keys[c][i], body, end)
				time.Sleep(k.pace)
			}
		}()
	}
	wg.Wait()
}

func (k *keyedCommits) commit(eu, key, body string, end time.Time) {
	var inUseSince time.Time
	for attempt := 0; time.Now().Before(end); attempt++ {
		if attempt > 0 {
			k.retries.Add(1)
			time.Sleep(min(time.Duration(attempt)*100*time.Millisecond, time.Second))
		}
		start := time.Now()
		r, err := restclient.Do(k.base(), "POST", "/api/v1/splats", withKey(k.tn.keys(eu), key), body)
		took := time.Since(start)
		k.mu.Lock()
		k.slowest = max(k.slowest, took)
		k.mu.Unlock()
		if err != nil {
			k.st.add(0, err)
			continue
		}
		k.st.add(r.Status, nil)
		if r.Status == 409 && r.Body["code"] == idempotency.CodeInUse {
			if inUseSince.IsZero() {
				inUseSince = start
			}
			k.mu.Lock()
			k.inUseFor = max(k.inUseFor, time.Since(inUseSince))
			k.mu.Unlock()
			continue
		}
		inUseSince = time.Time{}
		if r.Status >= 500 {
			continue
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		if r.Header.Get(idempotency.ReplayedHeader) == "true" {
			k.replays.Add(1)
		}
		if r.Status == 201 {
			k.acked[key], _ = r.Body["splatId"].(string)
		} else {
			k.refused[key] = string(r.Raw)
		}
		return
	}
}

// report records the promises shared by both cases: every commit acknowledged once, nothing
// charged twice, nothing acknowledged lost, no key stuck longer than its lease.
func (k *keyedCommits) report(rep *chaosReport) {
	total := 0
	for _, u := range k.uploads {
		total += len(u)
	}
	scenes, lost := 0, 0
	live := map[string]bool{}
	for _, eu := range k.eus {
		scenes += sceneCount(k.t, k.tn, eu)
		rows, err := env.Process.DB.Pool.Query(context.Background(), `SELECT s.id FROM scenes s JOIN external_users u
			ON u.id = s.owner_id WHERE u.integration_id = $1 AND u.external_user_id = $2 AND s.archived_at IS NULL`, k.tn.IntegrationID, eu)
		require.NoError(k.t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(k.t, err)
		for _, id := range ids {
			live[id] = true
		}
	}
	for _, id := range k.acked {
		if !live[id] {
			lost++
		}
	}
	var used int64
	for _, eu := range k.eus {
		u, _ := usageOf(k.t, k.tn, eu)
		used += u
	}
	rep.info("keyed commits", float64(total))
	rep.info("retries", float64(k.retries.Load()))
	rep.info("replayed answers", float64(k.replays.Load()))
	rep.info("5xx answers", float64(k.st.count(func(s int) bool { return s >= 500 })))
	rep.info("transport errors", float64(k.st.errs))
	rep.equal("commits acknowledged 201", float64(len(k.acked)), float64(total))
	rep.zero("commits refused (4xx)", float64(len(k.refused)))
	rep.zero("double charges (scenes beyond the acknowledged)", float64(scenes-len(k.acked)))
	rep.zero("acknowledged scenes lost", float64(lost))
	rep.equal("bytes charged", float64(used), float64(64*32*len(k.acked)))
	rep.atMost("longest IN_USE stretch of one key (s)", k.inUseFor.Seconds(), (idempotency.Lease + 2*time.Second).Seconds())
	for key, body := range k.refused {
		rep.note("refused %s: %s", key, body)
		break
	}
	rep.note("answers: %s", k.st.String())
}

// TestChaosHungStoreUnderCommits: the object store hangs (SIGSTOP) while clients commit; every
// answer during the hang is a final 503 within the budget, and once the store is back every
// commit is acknowledged once and charged once.
func TestChaosHungStoreUnderCommits(t *testing.T) {
	hang := time.Duration(chaosScale("SPLATHOST_CHAOS_HANG_SECONDS", 4, 75)) * time.Second
	budget := 2 * time.Second
	if chaosFull {
		budget = 0 // the default budget (45 s): the hang outlasts it
	}
	rep := newChaosReport(t, "hung store under commits")
	sp := chaosSplit(t, func(o *testenv.SplitOptions) {
		if budget > 0 {
			o.Config.RequestBudget, o.Config.CloneWait = budget, budget/4
		}
	})
	k := newKeyedCommits(t, func() string { return sp.URL }, chaosScale("SPLATHOST_CHAOS_CLIENTS", 4, 16), chaosScale("SPLATHOST_CHAOS_COMMITS", 4, 10))
	resume := pauseStore(t)
	go func() {
		time.Sleep(hang)
		resume()
	}()
	k.run(hang + 2*time.Minute)
	resume()
	rep.info("store hung (s)", hang.Seconds())
	rep.info("503 UNAVAILABLE answers", float64(k.st.count(func(s int) bool { return s == 503 })))
	rep.atMost("longest answer (s)", k.slowest.Seconds(), max(budget, sp.Config.RequestBudget).Seconds()+5)
	k.report(rep)
	rep.check()
}

// TestChaosGatewayKillUnderKeyedCommits: the gateway is killed (kill -9) again and again while
// clients commit with keys and retry through its next incarnation: every commit is acknowledged
// once (the retry of one whose answer was lost replays it), none twice, no key stays IN_USE
// beyond its lease.
func TestChaosGatewayKillUnderKeyedCommits(t *testing.T) {
	kills := chaosScale("SPLATHOST_CHAOS_GATEWAY_KILLS", 3, 10)
	rep := newChaosReport(t, "gateway kill -9 under keyed commits")
	sp := chaosSplit(t, nil)
	k := newKeyedCommits(t, func() string { return sp.URL }, chaosScale("SPLATHOST_CHAOS_CLIENTS", 4, 16), chaosScale("SPLATHOST_CHAOS_COMMITS", 10, 25))
	// Spread over the kills (one about every second).
	k.pace = time.Duration(kills) * time.Second / time.Duration(len(k.uploads[0]))
	done := make(chan struct{})
	var finished atomic.Bool
	var killed atomic.Int64
	var killErr error
	go func() {
		defer close(done)
		for range kills {
			if finished.Load() {
				return
			}
			time.Sleep(700 * time.Millisecond)
			if err := sp.Kill("gateway"); err != nil {
				killErr = err
				return
			}
			killed.Add(1)
			deadline := time.Now().Add(30 * time.Second)
			for err := sp.Start("gateway"); err != nil; err = sp.Start("gateway") {
				if time.Now().After(deadline) {
					killErr = errors.Join(errors.New("gateway did not come back"), err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	k.run(3 * time.Minute)
	finished.Store(true)
	<-done
	require.NoError(t, killErr)
	rep.atMost("gateway kills short of the plan", float64(kills)-float64(killed.Load()), 0)
	rep.info("gateway kills", float64(killed.Load()))
	k.report(rep)
	rep.check()
}
