//go:build e2e

package e2e

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
	wfcontract "github.com/splathost/splathost/workflows/contract"
)

const retentionDay = 24 * time.Hour

// archiveSceneAt archives a scene the way the billing lifecycle does (hidden, private,
// non-embeddable; its counters are not the point here) and announces it.
func archiveSceneAt(t *testing.T, id string, at time.Time, protected bool) {
	t.Helper()
	updateScene(t, id, `archived_at = $2, archive_protected = $3, visibility = 'private', allow_embed = false`, at, protected)
}

func sceneRowExists(t *testing.T, id string) bool {
	t.Helper()
	var n int
	require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM scenes WHERE id = $1`, id).Scan(&n))
	return n == 1
}

// runRetention starts (or joins) the scene's retention timer through the product's own entry
// point and waits for its outcome; the in-process worker runs it.
func runRetention(t *testing.T, tn tenant, eu, id string, archivedAt time.Time) workflows.RetentionResult {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, workflows.StartSceneRetention(ctx, env.Process.Temporal, env.Config.TaskQueue, workflows.RetentionInput{
		SceneID: id, IntegrationID: tn.IntegrationID, ExternalUserID: eu, ArchivedAt: archivedAt}))
	var res workflows.RetentionResult
	require.NoError(t, env.Process.Temporal.GetWorkflow(ctx, workflows.RetentionWorkflowID(id, archivedAt), "").Get(ctx, &res))
	return res
}

// memoString decodes one memo field of a workflow.
func memoString(t *testing.T, workflowID, field string) string {
	t.Helper()
	d, err := env.Process.Temporal.DescribeWorkflowExecution(context.Background(), workflowID, "")
	require.NoError(t, err)
	p, ok := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[field]
	require.True(t, ok, "memo field %s is set", field)
	var v string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &v))
	return v
}

// TestRetentionRemovesOnlyEligibleScenes runs retention timers whose 44 days are over: the
// unprotected archived scene loses its row and objects; a protected one, a restored one and one
// archived again at another time keep theirs.
func TestRetentionRemovesOnlyEligibleScenes(t *testing.T) {
	a := newTenant(t)
	st := store(t)
	const eu = "retained"
	due := time.Now().Add(-45 * retentionDay).Truncate(time.Microsecond).UTC()
	scenes := map[string]map[string]any{}
	for _, name := range []string{"removed", "protected", "restored", "rearchived"} {
		scenes[name] = commitScene(t, a, eu, 4)
	}
	id := func(name string) string { return scenes[name]["id"].(string) }
	key := func(name string) string { return keyOf(t, scenes[name]["splatUrl"].(string)) }
	archiveSceneAt(t, id("removed"), due, false)
	archiveSceneAt(t, id("protected"), due, true)
	archiveSceneAt(t, id("restored"), due, false)
	updateScene(t, id("restored"), `archived_at = NULL, visibility = 'public', allow_embed = true`)
	// Archived again later (recently, so that no re-drive running meanwhile removes it): the
	// old archiving's timer must leave it alone.
	archiveSceneAt(t, id("rearchived"), time.Now().Truncate(time.Microsecond).UTC(), false)

	res := runRetention(t, a, eu, id("removed"), due)
	require.Equal(t, workflows.RetentionResult{Removed: true}, res)
	require.False(t, sceneRowExists(t, id("removed")))
	require.True(t, objectGone(t, st, key("removed")))
	require.Equal(t, workflows.PhaseRemoved, memoString(t, workflows.RetentionWorkflowID(id("removed"), due), "phase"))
	require.Equal(t, 404, do(t, "GET", splatPath(id("removed")), a.keys(""), nil).Status)

	for name, reason := range map[string]string{"protected": wfcontract.RetentionKeptProtected,
		"restored": wfcontract.RetentionKeptRestored, "rearchived": wfcontract.RetentionKeptRearchive} {
		res := runRetention(t, a, eu, id(name), due)
		require.Equal(t, workflows.RetentionResult{Reason: reason}, res, name)
		require.True(t, sceneRowExists(t, id(name)), name)
		require.False(t, objectGone(t, st, key(name)), name)
		require.Equal(t, workflows.PhaseKept, memoString(t, workflows.RetentionWorkflowID(id(name), due), "phase"))
	}
	require.Equal(t, 200, do(t, "GET", splatPath(id("restored")), a.keys(eu), nil).Status)

	// Running the same timer again joins the finished one: nothing more happens.
	require.Equal(t, workflows.RetentionResult{Removed: true}, runRetention(t, a, eu, id("removed"), due))
}

// TestRetentionTimerFiresAndAnswersItsPhase runs a timer with two seconds of dormancy left on
// the real server: the phase query answers 'dormancy' while it waits, then the scene goes.
// With SPLATHOST_RECORD_HISTORY=1 it writes the history the replay test replays.
func TestRetentionTimerFiresAndAnswersItsPhase(t *testing.T) {
	a := newTenant(t)
	const eu = "dormant"
	sc := commitScene(t, a, eu, 3)
	id := sc["id"].(string)
	archivedAt := time.Now().Add(-44*retentionDay + 3*time.Second).Truncate(time.Microsecond).UTC()
	archiveSceneAt(t, id, archivedAt, false)
	ctx := context.Background()
	require.NoError(t, workflows.StartSceneRetention(ctx, env.Process.Temporal, env.Config.TaskQueue, workflows.RetentionInput{
		SceneID: id, IntegrationID: a.IntegrationID, ExternalUserID: eu, ArchivedAt: archivedAt}))
	wid := workflows.RetentionWorkflowID(id, archivedAt)
	require.Eventually(t, func() bool {
		v, err := env.Process.Temporal.QueryWorkflow(ctx, wid, "", workflows.PhaseQuery)
		if err != nil {
			return false
		}
		var p workflows.RetentionPhase
		return v.Get(&p) == nil && p.Phase == workflows.PhaseDormancy && p.RemoveAt.Equal(archivedAt.Add(44*retentionDay))
	}, 5*time.Second, 20*time.Millisecond)
	d, err := env.Process.Temporal.DescribeWorkflowExecution(ctx, wid, "")
	require.NoError(t, err)
	require.Equal(t, id, searchAttribute(t, d, "splatId"))
	require.Equal(t, eu, searchAttribute(t, d, "externalUserId"))
	require.Equal(t, a.IntegrationID, searchAttribute(t, d, "integrationId"))

	var res workflows.RetentionResult
	require.NoError(t, env.Process.Temporal.GetWorkflow(ctx, wid, "").Get(ctx, &res))
	require.True(t, res.Removed)
	require.False(t, sceneRowExists(t, id))
	recordHistory(t, wid, "", "scene_retention.json")
}

// TestRetentionTimerSurvivesStackRestart: a retention timer started on a stack is still there,
// running with its timer pending, after the whole stack (Temporal on its SQLite file included)
// stops and starts again on the same directory; a worker on the new stack answers its phase.
func TestRetentionTimerSurvivesStackRestart(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	ctx := context.Background()
	start := func() (*testenv.Stack, client.Client) {
		stack, err := testenv.StartStack(ctx, testenv.StackOptions{Dir: dir, Services: "none"})
		require.NoError(t, err)
		c, err := client.Dial(client.Options{HostPort: stack.State.TemporalAddr, Namespace: stack.State.TemporalNamespace,
			Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
		if err != nil {
			_ = stack.Stop()
		}
		require.NoError(t, err)
		return stack, c
	}
	// A worker of this test's own queue, so the first workflow task runs and the timer exists.
	const queue = "retention-restart"
	work := func(c client.Client) worker.Worker {
		w := worker.New(c, queue, worker.Options{})
		workflows.Register(w)
		activities.Register(w, &activities.Activities{})
		require.NoError(t, w.Start())
		return w
	}
	in := workflows.RetentionInput{SceneID: "eeeeeeeeeeeeeeeeeeeeeeee", IntegrationID: "ffffffffffffffffffffffff",
		ExternalUserID: "restart", ArchivedAt: time.Now().Truncate(time.Microsecond).UTC()}
	wid := workflows.RetentionWorkflowID(in.SceneID, in.ArchivedAt)
	timerStarted := func(c client.Client) bool {
		iter := c.GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			e, err := iter.Next()
			if err != nil {
				return false
			}
			if e.GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED {
				return true
			}
		}
		return false
	}

	stack, c := start()
	w := work(c)
	require.NoError(t, workflows.StartSceneRetention(ctx, c, queue, in))
	require.Eventually(t, func() bool { return timerStarted(c) }, 10*time.Second, 50*time.Millisecond)
	w.Stop()
	c.Close()
	require.NoError(t, stack.Stop())

	stack, c = start()
	defer func() { c.Close(); _ = stack.Stop() }()
	d, err := c.DescribeWorkflowExecution(ctx, wid, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
	require.True(t, timerStarted(c))
	w = work(c)
	defer w.Stop()
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(ctx, wid, "", workflows.PhaseQuery)
		var p workflows.RetentionPhase
		return err == nil && v.Get(&p) == nil && p.Phase == workflows.PhaseGrace && p.RemoveAt.Equal(in.ArchivedAt.Add(44*retentionDay))
	}, 20*time.Second, 100*time.Millisecond)
	require.NoError(t, workflows.CancelSceneRetention(ctx, c, in.SceneID, in.ArchivedAt))
}

// TestRetentionRedriveStartsMissingTimers: scenes archived while no timer could be started (a
// crash between the commit and the start) get one from the re-drive: an overdue one is removed
// at once, a recent one waits with its timer running and searchable.
func TestRetentionRedriveStartsMissingTimers(t *testing.T) {
	a := newTenant(t)
	st := store(t)
	const eu = "forgotten"
	overdue, recent, protected := commitScene(t, a, eu, 2), commitScene(t, a, eu, 2), commitScene(t, a, eu, 2)
	overdueAt := time.Now().Add(-50 * retentionDay).Truncate(time.Microsecond).UTC()
	recentAt := time.Now().Add(-2 * time.Minute).Truncate(time.Microsecond).UTC()
	archiveSceneAt(t, overdue["id"].(string), overdueAt, false)
	archiveSceneAt(t, recent["id"].(string), recentAt, false)
	archiveSceneAt(t, protected["id"].(string), overdueAt, true)

	ctx := context.Background()
	run, err := env.Process.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "retention-redrive-test-" + ids.New(), TaskQueue: env.Config.TaskQueue}, workflows.RedriveRetention, workflows.RetentionRedriveInput{})
	require.NoError(t, err)
	// No count is asserted: the scheduled re-drive may have started some timers first.
	var res workflows.RetentionRedriveResult
	require.NoError(t, run.Get(ctx, &res))
	recordHistory(t, run.GetID(), run.GetRunID(), "redrive_retention.json")

	eventually(t, "the overdue scene's removal", func() bool { return !sceneRowExists(t, overdue["id"].(string)) },
		func() string {
			return workflowMark(workflows.RetentionWorkflowID(overdue["id"].(string), overdueAt)) + purgeMark(t, a.IntegrationID)
		})
	require.True(t, objectGone(t, st, keyOf(t, overdue["splatUrl"].(string))))
	require.True(t, sceneRowExists(t, protected["id"].(string)))
	_, err = env.Process.Temporal.DescribeWorkflowExecution(ctx, workflows.RetentionWorkflowID(protected["id"].(string), overdueAt), "")
	require.Error(t, err, "a protected scene gets no timer")

	wid := workflows.RetentionWorkflowID(recent["id"].(string), recentAt)
	d, err := env.Process.Temporal.DescribeWorkflowExecution(ctx, wid, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
	require.Equal(t, recent["id"], searchAttribute(t, d, "splatId"))
	require.Equal(t, eu, searchAttribute(t, d, "externalUserId"))
	require.Equal(t, a.IntegrationID, searchAttribute(t, d, "integrationId"))

	// A restore cancels the timer; the scene stays.
	updateScene(t, recent["id"].(string), `archived_at = NULL`)
	require.NoError(t, workflows.CancelSceneRetention(ctx, env.Process.Temporal, recent["id"].(string), recentAt))
	err = env.Process.Temporal.GetWorkflow(ctx, wid, "").Get(ctx, nil)
	require.True(t, temporal.IsCanceledError(err), "%v", err)
	require.True(t, sceneRowExists(t, recent["id"].(string)))

	// The hourly schedule that runs the re-drive is in place.
	require.Eventually(t, func() bool {
		desc, err := env.Process.Temporal.ScheduleClient().GetHandle(ctx, workflows.RetentionRedriveScheduleID).Describe(ctx)
		return err == nil && len(desc.Schedule.Spec.Intervals) == 1 && desc.Schedule.Spec.Intervals[0].Every == workflows.RetentionRedriveEvery
	}, 10*time.Second, 50*time.Millisecond)
}
