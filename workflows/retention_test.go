package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

const day = 24 * time.Hour

var testArchivedAt = time.Date(2026, 3, 1, 10, 30, 0, 123456000, time.UTC)

var testRetention = RetentionInput{SceneID: "dddddddddddddddddddddddd", IntegrationID: testIntegration,
	OwnerID: testRecord, ExternalUserID: "customer-1", ArchivedAt: testArchivedAt}

// newRetentionEnv starts the test clock at the archiving and mocks PurgeArchivedScene with
// result; it returns the inputs the activity was called with.
func newRetentionEnv(t *testing.T, result contract.PurgeArchivedSceneResult) (*testsuite.TestWorkflowEnvironment, *[]contract.PurgeArchivedSceneInput) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(quiet()))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(slowMachine)
	a := &fakeActivities{}
	env.RegisterActivity(a)
	Register(env)
	env.SetStartTime(testArchivedAt)
	var calls []contract.PurgeArchivedSceneInput
	env.OnActivity(a.PurgeArchivedScene, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.PurgeArchivedSceneInput) (contract.PurgeArchivedSceneResult, error) {
			calls = append(calls, in)
			return result, nil
		})
	return env, &calls
}

func queryPhase(t *testing.T, env *testsuite.TestWorkflowEnvironment) RetentionPhase {
	t.Helper()
	v, err := env.QueryWorkflow(PhaseQuery)
	require.NoError(t, err)
	var p RetentionPhase
	require.NoError(t, v.Get(&p))
	return p
}

func TestRetentionRemovesAfter44Days(t *testing.T) {
	env, calls := newRetentionEnv(t, contract.PurgeArchivedSceneResult{Removed: true})
	var at13, at20 RetentionPhase
	env.RegisterDelayedCallback(func() { at13 = queryPhase(t, env) }, 13*day)
	env.RegisterDelayedCallback(func() { at20 = queryPhase(t, env) }, 20*day)
	var activityAt time.Time
	env.SetOnActivityStartedListener(func(_ *activity.Info, _ context.Context, _ converter.EncodedValues) { activityAt = env.Now() })

	began := time.Now()
	env.ExecuteWorkflow(SceneRetentionWorkflow, testRetention)
	require.Less(t, time.Since(began), 5*time.Second, "44 days pass on the test clock, not the wall clock")
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res RetentionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, RetentionResult{Removed: true}, res)

	removeAt := testArchivedAt.Add(44 * day)
	require.Equal(t, RetentionPhase{Phase: PhaseGrace, RemoveAt: removeAt}, at13)
	require.Equal(t, RetentionPhase{Phase: PhaseDormancy, RemoveAt: removeAt}, at20)
	require.Equal(t, PhaseRemoved, queryPhase(t, env).Phase)
	require.Equal(t, []contract.PurgeArchivedSceneInput{{SceneID: testRetention.SceneID,
		IntegrationID: testIntegration, ArchivedAt: testArchivedAt}}, *calls)
	require.False(t, activityAt.Before(removeAt), "removal ran at %s, due %s", activityAt, removeAt)
	require.Less(t, activityAt.Sub(removeAt), time.Minute)
}

func TestRetentionCancelEndsWithoutRemoving(t *testing.T) {
	for _, at := range []time.Duration{13 * day, 40 * day} {
		t.Run(at.String(), func(t *testing.T) {
			env, calls := newRetentionEnv(t, contract.PurgeArchivedSceneResult{Removed: true})
			env.RegisterDelayedCallback(env.CancelWorkflow, at)
			env.ExecuteWorkflow(SceneRetentionWorkflow, testRetention)
			require.True(t, env.IsWorkflowCompleted())
			var canceled *temporal.CanceledError
			require.ErrorAs(t, env.GetWorkflowError(), &canceled)
			require.Empty(t, *calls, "a canceled timer removes nothing")
			require.Less(t, env.Now().Sub(testArchivedAt), 44*day)
		})
	}
}

// TestRetentionKeepsARestoredScene: the activity finds the scene no longer eligible (restored or
// protected, and the cancellation was lost); the workflow reports it and removes nothing.
func TestRetentionKeepsARestoredScene(t *testing.T) {
	env, calls := newRetentionEnv(t, contract.PurgeArchivedSceneResult{Reason: contract.RetentionKeptProtected})
	env.ExecuteWorkflow(SceneRetentionWorkflow, testRetention)
	require.NoError(t, env.GetWorkflowError())
	var res RetentionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, RetentionResult{Reason: contract.RetentionKeptProtected}, res)
	require.Len(t, *calls, 1)
	require.Equal(t, PhaseKept, queryPhase(t, env).Phase)
}

// TestRetentionStartedLateCountsFromTheArchiving: a timer the re-drive starts 45 days after
// the archiving removes at once; one started at day 20 skips the grace.
func TestRetentionStartedLateCountsFromTheArchiving(t *testing.T) {
	env, calls := newRetentionEnv(t, contract.PurgeArchivedSceneResult{Removed: true})
	env.SetStartTime(testArchivedAt.Add(45 * day))
	env.ExecuteWorkflow(SceneRetentionWorkflow, testRetention)
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, *calls, 1)
	require.Less(t, env.Now().Sub(testArchivedAt.Add(45*day)), time.Minute)

	env, calls = newRetentionEnv(t, contract.PurgeArchivedSceneResult{Removed: true})
	env.SetStartTime(testArchivedAt.Add(20 * day))
	var first RetentionPhase
	env.RegisterDelayedCallback(func() { first = queryPhase(t, env) }, time.Hour)
	env.ExecuteWorkflow(SceneRetentionWorkflow, testRetention)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, PhaseDormancy, first.Phase)
	require.Len(t, *calls, 1)
	require.Less(t, env.Now().Sub(testArchivedAt.Add(44*day)), time.Minute)
}

func TestRetentionRefusesBadInput(t *testing.T) {
	env, calls := newRetentionEnv(t, contract.PurgeArchivedSceneResult{Removed: true})
	env.ExecuteWorkflow(SceneRetentionWorkflow, RetentionInput{SceneID: "x"})
	var app *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &app)
	require.Equal(t, contract.ErrBadInput, app.Type())
	require.Empty(t, *calls)
}

// TestRedriveRetentionStartsEveryArchivedScene pages through the archived scenes and starts a
// timer for each under its business id.
func TestRedriveRetentionStartsEveryArchivedScene(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(quiet()))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(slowMachine)
	a := &fakeActivities{}
	env.RegisterActivity(a)
	Register(env)
	var all []contract.ArchivedScene
	for i := range retentionPage + 5 {
		all = append(all, contract.ArchivedScene{SceneID: testRetention.SceneID[:20] + string(rune('a'+i/26%26)) + string(rune('a'+i%26)) + "zz",
			IntegrationID: testIntegration, OwnerID: testRecord, ExternalUserID: "customer-1",
			ArchivedAt: testArchivedAt.Add(time.Duration(i) * time.Second)})
	}
	var pages []contract.ArchivedScenesInput
	env.OnActivity(a.ArchivedScenes, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.ArchivedScenesInput) (contract.ArchivedScenesResult, error) {
			pages = append(pages, in)
			start := 0
			for start < len(all) && !in.AfterArchivedAt.IsZero() && !all[start].ArchivedAt.After(in.AfterArchivedAt) {
				start++
			}
			end := min(start+in.Limit, len(all))
			return contract.ArchivedScenesResult{Scenes: all[start:end], Last: end-start < in.Limit}, nil
		})
	started := map[string]RetentionInput{}
	env.OnWorkflow(SceneRetentionWorkflow, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in RetentionInput) (RetentionResult, error) {
			require.Equal(t, RetentionWorkflowID(in.SceneID, in.ArchivedAt), workflow.GetInfo(ctx).WorkflowExecution.ID)
			started[in.SceneID] = in
			return RetentionResult{}, nil
		})

	env.ExecuteWorkflow(RedriveRetention, RetentionRedriveInput{})
	require.NoError(t, env.GetWorkflowError())
	var res RetentionRedriveResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, retentionPage+5, res.Started)
	require.Len(t, pages, 2)
	require.Equal(t, retentionRedriveMinAge, pages[0].MinAge)
	require.Len(t, started, len(all))
	for _, sc := range all {
		require.Equal(t, RetentionInput{SceneID: sc.SceneID, IntegrationID: sc.IntegrationID,
			OwnerID: sc.OwnerID, ExternalUserID: sc.ExternalUserID, ArchivedAt: sc.ArchivedAt}, started[sc.SceneID])
	}
}
