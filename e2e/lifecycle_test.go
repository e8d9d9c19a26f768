//go:build e2e

package e2e

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
)

// Billing lifecycle through PUT /api/v1/external-user (internal/customers/lifecycle.go): every row of
// the spec's transition table, with the customer's and the account's usage after each.

// archiveRow is the retained-archive state of one scene row.
type archiveRow struct {
	archivedAt *time.Time
	protected  bool
	visibility string
	allowEmbed bool
	featured   bool
}

func archiveState(t *testing.T, id string) archiveRow {
	t.Helper()
	var r archiveRow
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT archived_at, archive_protected, visibility, allow_embed, featured FROM scenes WHERE id = $1`, id).
		Scan(&r.archivedAt, &r.protected, &r.visibility, &r.allowEmbed, &r.featured))
	return r
}

// lifecyclePut sends a PUT /api/v1/external-user and returns the record, requiring a 200.
func lifecyclePut(t *testing.T, tn tenant, who string, body map[string]any) map[string]any {
	t.Helper()
	r := do(t, "PUT", "/api/v1/external-user", tn.keys(who), body)
	require.Equal(t, 200, r.Status, string(r.Raw))
	return eu(r.Body)
}

// requireUsage checks the customer's usage (storage bytes, live scenes) and the account's.
func requireUsage(t *testing.T, tn tenant, who string, bytes, scenes, acctBytes, acctScenes int64) {
	t.Helper()
	used, n := usageOf(t, tn, who)
	require.Equal(t, bytes, used, "customer usedBytes")
	require.Equal(t, scenes, n, "customer live scenes")
	aUsed, aN := accountOf(t, tn)
	require.Equal(t, acctBytes, aUsed, "account usedBytes")
	require.Equal(t, acctScenes, aN, "account splatCount")
}

// requireArchived checks that a scene is in the retained archive: hidden from its owner's GET
// and list, private and non-embeddable.
func requireArchived(t *testing.T, tn tenant, who, id string, protected bool) archiveRow {
	t.Helper()
	st := archiveState(t, id)
	require.NotNil(t, st.archivedAt, "%s is archived", id)
	require.Equal(t, protected, st.protected, "%s archive_protected", id)
	require.Equal(t, "private", st.visibility)
	require.False(t, st.allowEmbed)
	require.False(t, st.featured)
	require.Eventually(t, func() bool { return do(t, "GET", splatPath(id), tn.keys(who), nil).Status == 404 },
		5*time.Second, 10*time.Millisecond, "GET of an archived scene")
	requireEnvelope(t, do(t, "GET", splatPath(id), tn.keys(who), nil), 404)
	ids, _ := listPage(t, tn, who, "")
	require.NotContains(t, ids, id)
	return st
}

// requireLive checks that a scene is live with the given settings.
func requireLive(t *testing.T, tn tenant, who, id, visibility string, allowEmbed bool) {
	t.Helper()
	st := archiveState(t, id)
	require.Nil(t, st.archivedAt, "%s is live", id)
	var r map[string]any
	require.Eventually(t, func() bool {
		resp := do(t, "GET", splatPath(id), tn.keys(who), nil)
		if resp.Status != 200 {
			return false
		}
		r = splatOf(resp)
		return true
	}, 5*time.Second, 10*time.Millisecond, "GET of a live scene %s", id)
	require.Equal(t, visibility, r["visibility"])
	require.Equal(t, allowEmbed, r["allowEmbed"])
}

func retentionID(t *testing.T, id string) string {
	t.Helper()
	st := archiveState(t, id)
	require.NotNil(t, st.archivedAt)
	return workflows.RetentionWorkflowID(id, *st.archivedAt)
}

// requireRetentionTimer checks that the retention workflow of an archiving exists, with its
// search attributes. Whether it has run yet does not matter: it waits for 44 days.
func requireRetentionTimer(t *testing.T, tn tenant, who, id, wid string) {
	t.Helper()
	d, err := env.Process.Temporal.DescribeWorkflowExecution(context.Background(), wid, "")
	require.NoError(t, err, "retention workflow %s", wid)
	require.Equal(t, workflows.SceneRetentionWorkflow, d.GetWorkflowExecutionInfo().GetType().GetName())
	require.Equal(t, tn.IntegrationID, searchAttribute(t, d, "integrationId"))
	require.Equal(t, who, searchAttribute(t, d, "externalUserId"))
	require.Equal(t, id, searchAttribute(t, d, "splatId"))
}

func requireNoRetentionTimer(t *testing.T, wid string) {
	t.Helper()
	_, err := env.Process.Temporal.DescribeWorkflowExecution(context.Background(), wid, "")
	var nf *serviceerror.NotFound
	require.True(t, errors.As(err, &nf), "no retention workflow %s: %v", wid, err)
}

// requireRetentionCanceled checks that the timer was canceled: the workflow ends canceled, or,
// while no worker runs the SceneRetention type, its cancel request is in the history.
func requireRetentionCanceled(t *testing.T, wid string) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		d, err := env.Process.Temporal.DescribeWorkflowExecution(ctx, wid, "")
		if err != nil {
			return false
		}
		if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
			return true
		}
		var requested, unregistered bool
		iter := env.Process.Temporal.GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			e, err := iter.Next()
			if err != nil {
				return false
			}
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
				requested = true
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
				if strings.Contains(e.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage(), "unable to find workflow type") {
					unregistered = true
				}
			}
		}
		return requested && unregistered
	}, 30*time.Second, 50*time.Millisecond, "retention workflow %s canceled", wid)
}

func patchSplat(t *testing.T, tn tenant, who, id string, body map[string]any) {
	t.Helper()
	r := do(t, "PATCH", splatPath(id), tn.keys(who), body)
	require.Equal(t, 200, r.Status, string(r.Raw))
}

// TestSuspendKeepProtectReactivate: suspend with keepSplatIds keeps exactly those; bad keeper
// sets change nothing; an identity-only PUT leaves the archive alone; reactivation and raised
// caps restore in the documented order (protected first, then most recently archived, then id)
// with the prior visibility and allowEmbed back, and cancel the retention timers.
func TestSuspendKeepProtectReactivate(t *testing.T) {
	a := newTenant(t)
	const who = "subscriber"
	s1 := commitScene(t, a, who, 1)["id"].(string) // 32 B
	s2 := commitScene(t, a, who, 2)["id"].(string) // 64 B
	s3 := commitScene(t, a, who, 3)["id"].(string) // 96 B
	s4 := commitScene(t, a, who, 4)["id"].(string) // 128 B
	patchSplat(t, a, who, s3, map[string]any{"visibility": "public"})
	patchSplat(t, a, who, s4, map[string]any{"allowEmbed": false})
	foreign := commitScene(t, a, "neighbour", 1)["id"].(string)
	requireUsage(t, a, who, 320, 4, 352, 5)

	// Keepers that do not fit, or are not this customer's live scenes: 400, nothing changes.
	issues := requireEnvelope(t, do(t, "PUT", "/api/v1/external-user", a.keys(who), map[string]any{
		"billingState": "suspended", "keepSplatIds": []string{s1, s2}, "maxSplats": 1, "limitBytes": 50}), 400)
	require.True(t, issuesMention(issues, "maxSplats"), "%v", issues)
	require.True(t, issuesMention(issues, "limitBytes"), "%v", issues)
	issues = requireEnvelope(t, do(t, "PUT", "/api/v1/external-user", a.keys(who), map[string]any{
		"billingState": "suspended", "keepSplatIds": []string{s1, foreign}, "limitBytes": 1000, "maxSplats": 5}), 400)
	require.True(t, issuesMention(issues, foreign), "%v", issues)
	issues = requireEnvelope(t, do(t, "PUT", "/api/v1/external-user", a.keys(who), map[string]any{
		"protectedSplatIds": []string{foreign}}), 400)
	require.True(t, issuesMention(issues, foreign), "%v", issues)
	g := do(t, "GET", "/api/v1/external-user", a.keys(who), nil)
	require.Equal(t, "active", eu(g.Body)["billingState"])
	require.Equal(t, "active", eu(g.Body)["status"])
	requireUsage(t, a, who, 320, 4, 352, 5)
	for _, id := range []string{s1, s2, s3, s4} {
		require.Nil(t, archiveState(t, id).archivedAt)
	}

	// Suspend keeping s1 and s2, protecting s4: s3 and s4 are archived and released.
	u := lifecyclePut(t, a, who, map[string]any{"billingState": "suspended", "keepSplatIds": []string{s1, s2},
		"limitBytes": 96, "maxSplats": 2, "protectedSplatIds": []string{s4}})
	require.Equal(t, "suspended", u["billingState"])
	require.Equal(t, "inactive", u["status"])
	require.EqualValues(t, 96, u["usedBytes"])
	requireUsage(t, a, who, 96, 2, 128, 3)
	requireLive(t, a, who, s1, "private", true)
	requireLive(t, a, who, s2, "private", true)
	requireArchived(t, a, who, s3, false)
	requireArchived(t, a, who, s4, true)
	w3, w4 := retentionID(t, s3), retentionID(t, s4)
	requireRetentionTimer(t, a, who, s3, w3)
	requireNoRetentionTimer(t, w4) // protected: never removed
	// The other customer is untouched.
	require.Equal(t, 200, do(t, "GET", splatPath(foreign), a.keys("neighbour"), nil).Status)

	// An archived scene is not a keeper, and a rejected PUT changes nothing.
	issues = requireEnvelope(t, do(t, "PUT", "/api/v1/external-user", a.keys(who), map[string]any{
		"billingState": "active", "keepSplatIds": []string{s1, s3}, "limitBytes": 1000, "maxSplats": 5}), 400)
	require.True(t, issuesMention(issues, s3), "%v", issues)
	requireUsage(t, a, who, 96, 2, 128, 3)

	// Identity fields only: the lifecycle is not re-applied.
	u = lifecyclePut(t, a, who, map[string]any{"displayName": "Still here"})
	require.Equal(t, "suspended", u["billingState"])
	requireUsage(t, a, who, 96, 2, 128, 3)
	require.NotNil(t, archiveState(t, s3).archivedAt)
	require.Equal(t, w3, retentionID(t, s3), "the archiving is unchanged")

	// Reactivate with room for one more scene: the protected s4 comes back first, as it was.
	u = lifecyclePut(t, a, who, map[string]any{"billingState": "active", "status": "active", "limitBytes": 1000, "maxSplats": 3})
	require.Equal(t, "active", u["billingState"])
	require.Equal(t, "active", u["status"])
	requireUsage(t, a, who, 224, 3, 256, 4)
	requireLive(t, a, who, s4, "private", false)
	require.True(t, archiveState(t, s4).protected, "protection stays on the scene")
	requireArchived(t, a, who, s3, false)

	// Raising the caps restores s3 with its prior settings and cancels its timer.
	lifecyclePut(t, a, who, map[string]any{"maxSplats": 10})
	requireUsage(t, a, who, 320, 4, 352, 5)
	requireLive(t, a, who, s3, "public", true)
	requireRetentionCanceled(t, w3)
	ids, _ := listPage(t, a, who, "")
	require.ElementsMatch(t, []string{s1, s2, s3, s4}, ids)
}

// TestCancelAutoKeepersProtectAndRestoreOrder: without keepSplatIds, lowered caps keep the most
// recently updated scenes; canceled with omitted caps archives everything and schedules removal;
// protecting an archived scene cancels its timer; a restore with room for some follows the
// documented order.
func TestCancelAutoKeepersProtectAndRestoreOrder(t *testing.T) {
	a := newTenant(t)
	const who = "canceller"
	var c []string
	for i := 0; i < 4; i++ {
		c = append(c, commitScene(t, a, who, 1)["id"].(string)) // 32 B each
	}
	time.Sleep(5 * time.Millisecond)
	patchSplat(t, a, who, c[1], map[string]any{"title": "touched"}) // now the most recently updated
	requireUsage(t, a, who, 128, 4, 128, 4)

	// Lowered caps on an active customer: c[1] and c[3] (most recently updated) are kept.
	u := lifecyclePut(t, a, who, map[string]any{"maxSplats": 2})
	require.Equal(t, "active", u["billingState"])
	requireUsage(t, a, who, 64, 2, 64, 2)
	requireLive(t, a, who, c[1], "private", true)
	requireLive(t, a, who, c[3], "private", true)
	requireArchived(t, a, who, c[0], false)
	requireArchived(t, a, who, c[2], false)
	w0, w2 := retentionID(t, c[0]), retentionID(t, c[2])
	requireRetentionTimer(t, a, who, c[0], w0)
	requireRetentionTimer(t, a, who, c[2], w2)

	// Canceled, caps omitted: they default to 0 and everything goes into the archive, each with
	// its removal scheduled.
	time.Sleep(5 * time.Millisecond)
	u = lifecyclePut(t, a, who, map[string]any{"billingState": "canceled"})
	require.Equal(t, "canceled", u["billingState"])
	require.Equal(t, "inactive", u["status"])
	require.EqualValues(t, 0, u["limitBytes"])
	require.EqualValues(t, 0, u["maxSplats"])
	requireUsage(t, a, who, 0, 0, 0, 0)
	w1, w3 := retentionID(t, c[1]), retentionID(t, c[3])
	for _, id := range c {
		requireArchived(t, a, who, id, false)
		requireRetentionTimer(t, a, who, id, retentionID(t, id))
	}
	require.Equal(t, w0, retentionID(t, c[0]), "a scene archived already keeps its archiving")

	// Protecting an archived scene cancels its timer.
	lifecyclePut(t, a, who, map[string]any{"protectedSplatIds": []string{c[2]}})
	require.True(t, archiveState(t, c[2]).protected)
	requireRetentionCanceled(t, w2)
	requireUsage(t, a, who, 0, 0, 0, 0)

	// Reactivate with room for two: protected c[2] first, then the most recently archived (c[1]
	// and c[3], archived together: lowest id first).
	lifecyclePut(t, a, who, map[string]any{"billingState": "active", "status": "active", "limitBytes": 64, "maxSplats": nil})
	requireUsage(t, a, who, 64, 2, 64, 2)
	recent := []string{c[1], c[3]}
	sort.Strings(recent)
	requireLive(t, a, who, c[2], "private", true)
	requireLive(t, a, who, recent[0], "private", true)
	requireArchived(t, a, who, recent[1], false)
	requireArchived(t, a, who, c[0], false)
	wRestored := map[string]string{c[1]: w1, c[3]: w3}[recent[0]]
	requireRetentionCanceled(t, wRestored)

	// Raising the byte cap restores the rest.
	lifecyclePut(t, a, who, map[string]any{"limitBytes": 1 << 20})
	requireUsage(t, a, who, 128, 4, 128, 4)
	requireRetentionCanceled(t, w0)
	for _, id := range c {
		requireLive(t, a, who, id, "private", true)
	}
}

// TestRestoreRespectsTheAccountBundle: a restore never pushes the account past its bundle when
// overage is off, even if the customer's own caps allow it (over-allocation across customers).
func TestRestoreRespectsTheAccountBundle(t *testing.T) {
	a := newIntegration(t, newAccount(t, "pro", 200), nil)
	const who = "bundled"
	x := commitScene(t, a, who, 2)["id"].(string) // 64 B
	y := commitScene(t, a, who, 3)["id"].(string) // 96 B
	lifecyclePut(t, a, who, map[string]any{"billingState": "suspended"})
	requireUsage(t, a, who, 0, 0, 0, 0)
	// Another customer takes most of the bundle meanwhile.
	commitScene(t, a, "other", 3) // 96 B
	lifecyclePut(t, a, who, map[string]any{"billingState": "active", "status": "active", "limitBytes": 1000, "maxSplats": nil})
	// 200 - 96 leaves 104 B: x and y were archived together, so the lower id comes back first
	// (64 or 96 B fit); the other one would take the account past its bundle.
	first, second := x, y
	if y < x {
		first, second = y, x
	}
	bytes := map[string]int64{x: 64, y: 96}[first]
	requireUsage(t, a, who, bytes, 1, 96+bytes, 2)
	require.Nil(t, archiveState(t, first).archivedAt)
	require.NotNil(t, archiveState(t, second).archivedAt)
}

// TestLifecycleRacesSceneWrites: PUTs that archive and restore run against scene PATCHes and
// DELETEs of the same customer. Every writer takes scene rows, then the customer, then the
// account, so none fails, and the counters end equal to the live scenes.
func TestLifecycleRacesSceneWrites(t *testing.T) {
	a := newTenant(t)
	const who = "racer"
	var ids []string
	for i := 0; i < 8; i++ {
		ids = append(ids, commitScene(t, a, who, i+1)["id"].(string))
	}
	type result struct {
		what   string
		status int
		raw    string
	}
	results := make(chan result, 64)
	call := func(what, method, path string, body any) {
		r, err := testenv.Do(env.URL, method, path, a.keys(who), body)
		if err != nil {
			results <- result{what, 0, err.Error()}
			return
		}
		results <- result{what, r.Status, string(r.Raw)}
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := 0; i < 6; i++ {
			if i%2 == 0 {
				call("suspend", "PUT", "/api/v1/external-user", map[string]any{"billingState": "suspended", "limitBytes": 64})
			} else {
				call("reactivate", "PUT", "/api/v1/external-user", map[string]any{"billingState": "active", "status": "active", "limitBytes": 1 << 20, "maxSplats": nil})
			}
		}
	}()
	go func() {
		defer wg.Done()
		for _, id := range ids[:4] {
			call("delete", "DELETE", splatPath(id), nil)
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 6; i++ {
			call("patch", "PATCH", splatPath(ids[4+i%4]), map[string]any{"title": "t" + strconv.Itoa(i)})
		}
	}()
	wg.Wait()
	close(results)
	for r := range results {
		switch r.what {
		case "suspend", "reactivate":
			require.Equal(t, 200, r.status, "%s: %s", r.what, r.raw)
		default: // a scene archived at that moment answers 404
			require.Contains(t, []int{200, 404}, r.status, "%s: %s", r.what, r.raw)
		}
	}
	var liveBytes, liveScenes int64
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(),
		`SELECT coalesce(sum(file_size_bytes), 0), count(*) FROM scenes s JOIN external_users u ON u.id = s.owner_id
		 WHERE u.integration_id = $1 AND u.external_user_id = $2 AND s.archived_at IS NULL`, a.IntegrationID, who).
		Scan(&liveBytes, &liveScenes))
	requireUsage(t, a, who, liveBytes, liveScenes, liveBytes, liveScenes)
}
