package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

func TestRedriveStartsEveryOpenPurgeUnderItsBusinessID(t *testing.T) {
	env, a := newEnv(t)
	other := contract.PendingPurge{PurgeID: "p2", IntegrationID: testIntegration, OwnerID: "dddddddddddddddddddddddd", ExternalUserID: "customer-2"}
	// p3 is a second deletion of the first customer: its purge waits until p1's has closed.
	again := contract.PendingPurge{PurgeID: "p3", IntegrationID: testIntegration, OwnerID: testRecord, ExternalUserID: "customer-1"}
	env.OnActivity(a.PendingPurges, mock.Anything, contract.PendingPurgesInput{MinAge: redriveMinAge, Limit: redriveLimit}).Return(
		contract.PendingPurgesResult{Purges: []contract.PendingPurge{
			{PurgeID: testPurge.PurgeID, IntegrationID: testIntegration, OwnerID: testRecord, ExternalUserID: "customer-1"},
			other, again,
		}}, nil)
	started := map[string]PurgeInput{}
	env.OnWorkflow(PurgeCustomerAssets, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in PurgeInput) (PurgeResult, error) {
			info := workflow.GetInfo(ctx)
			started[info.WorkflowExecution.ID] = in
			require.Equal(t, []string{in.IntegrationID}, saValues(t, ctx, SAIntegrationID.GetName()))
			require.Equal(t, []string{in.ExternalUserID}, saValues(t, ctx, SAExternalUserID.GetName()))
			return PurgeResult{}, workflow.Sleep(ctx, time.Hour)
		})

	env.ExecuteWorkflow(RedrivePurges, RedriveInput{})
	require.NoError(t, env.GetWorkflowError())
	var res RedriveResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, RedriveResult{Started: 2, Running: 1}, res)
	require.Equal(t, map[string]PurgeInput{
		PurgeWorkflowID(testIntegration, testRecord): testPurge,
		PurgeWorkflowID(testIntegration, other.OwnerID): {PurgeID: "p2", IntegrationID: testIntegration,
			OwnerID: other.OwnerID, ExternalUserID: "customer-2"},
	}, started)
}

func saValues(t *testing.T, ctx workflow.Context, name string) []string {
	t.Helper()
	for k, v := range workflow.GetTypedSearchAttributes(ctx).GetUntypedValues() {
		if k.GetName() == name {
			if s, ok := v.(string); ok {
				return []string{s}
			}
		}
	}
	return nil
}

// noStrays answers the bucket sweep as it answers over an empty bucket: one call, nothing
// deleted, the listing at its end.
func noStrays(env *testsuite.TestWorkflowEnvironment, a *fakeActivities) {
	env.OnActivity(a.DeleteStrayObjects, mock.Anything, mock.Anything).Return(contract.DeleteStrayObjectsResult{}, nil).Once()
}

func TestSweepRunsBatchesUntilNothingIsLeft(t *testing.T) {
	env, a := newEnv(t)
	calls := 0
	env.OnActivity(a.DeleteOrphanUploads, mock.Anything, contract.DeleteOrphanUploadsInput{
		MinAge: orphanMinAge, BatchSize: sweepBatch, MaxTickets: sweepPerCall, MultipartIdle: multipartIdle}).Return(
		func(context.Context, contract.DeleteOrphanUploadsInput) (contract.DeleteOrphanUploadsResult, error) {
			calls++
			return contract.DeleteOrphanUploadsResult{Tickets: 10, Objects: 20, More: calls < 3}, nil
		})
	env.OnActivity(a.DeleteOrphanRenditions, mock.Anything, contract.DeleteOrphanRenditionsInput{
		Within: orphanRenditionLookback}).Return(contract.DeleteOrphanRenditionsResult{Checked: 3, Folders: 2, Objects: 5}, nil).Once()
	noStrays(env, a)
	env.ExecuteWorkflow(SweepOrphanUploads, SweepInput{})
	require.NoError(t, env.GetWorkflowError())
	var res SweepResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, SweepResult{Tickets: 30, Renditions: 2, Objects: 65}, res)
	require.Equal(t, 3, calls)
}

func TestSweepRunIsBounded(t *testing.T) {
	env, a := newEnv(t)
	calls := 0
	env.OnActivity(a.DeleteOrphanUploads, mock.Anything, mock.Anything).Return(
		func(context.Context, contract.DeleteOrphanUploadsInput) (contract.DeleteOrphanUploadsResult, error) {
			calls++
			return contract.DeleteOrphanUploadsResult{Tickets: 1, More: true}, nil
		})
	env.OnActivity(a.DeleteOrphanRenditions, mock.Anything, mock.Anything).Return(contract.DeleteOrphanRenditionsResult{}, nil)
	noStrays(env, a)
	env.ExecuteWorkflow(SweepOrphanUploads, SweepInput{})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, sweepMaxCalls, calls, "the next scheduled run takes the rest")
}

func TestOrphanRenditionLookbackSpansManySweeps(t *testing.T) {
	// A failed or skipped run must not lose a terminated conversion's folder.
	require.GreaterOrEqual(t, orphanRenditionLookback, 10*OrphanSweepEvery)
}

func TestOrphanAgeExceedsTheCommitGrace(t *testing.T) {
	// services/scene/commit.go accepts commits until expires_at + 1 h (commitGrace).
	require.Greater(t, orphanMinAge, time.Hour)
}
