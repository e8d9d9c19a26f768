package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/workflows/contract"
)

// TestViewRetentionCompactsDeletedScenesAfterItsSweep: the daily run drops expired partitions,
// marks the scenes that no longer exist deleted, and only then compacts, so the scenes its own
// sweep found go in the same batch as every other deleted scene.
func TestViewRetentionCompactsDeletedScenesAfterItsSweep(t *testing.T) {
	env, a := newEnv(t)
	var order []string
	env.OnActivity(a.DropExpiredViews, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ contract.DropExpiredViewsInput) (contract.DropExpiredViewsResult, error) {
			order = append(order, contract.DropExpiredViews)
			return contract.DropExpiredViewsResult{Dropped: []string{"view_events:202401"}}, nil
		})
	env.OnActivity(a.DeleteOrphanViews, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ contract.DeleteOrphanViewsInput) (contract.DeleteOrphanViewsResult, error) {
			order = append(order, contract.DeleteOrphanViews)
			return contract.DeleteOrphanViewsResult{Scenes: 2}, nil
		})
	env.OnActivity(a.CompactDeletedViews, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ contract.CompactDeletedViewsInput) (contract.CompactDeletedViewsResult, error) {
			order = append(order, contract.CompactDeletedViews)
			return contract.CompactDeletedViewsResult{Scenes: 7}, nil
		})
	env.ExecuteWorkflow(DropExpiredViews, ViewRetentionInput{})
	require.NoError(t, env.GetWorkflowError())
	var res ViewRetentionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, ViewRetentionResult{Dropped: []string{"view_events:202401"}, OrphanScenes: 2, CompactedScenes: 7}, res)
	require.Equal(t, []string{contract.DropExpiredViews, contract.DeleteOrphanViews, contract.CompactDeletedViews}, order)
}
