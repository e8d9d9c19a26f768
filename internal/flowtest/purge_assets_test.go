package flowtest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/activities/activitiestest"
	"github.com/splathost/splathost/workflows"
	"github.com/splathost/splathost/workflows/contract"
)

// TestPurgeAssetsClaimsUploadsBeforeDeleting: an upload purge asks ClaimUploads first (which
// fixes the keys to those still free) and deletes only afterwards.
func TestPurgeAssetsClaimsUploadsBeforeDeleting(t *testing.T) {
	b := &activitiestest.Bucket{}
	key := testOwner + "splat_file/t1/scene.splat"
	b.Put(key)
	env, a := newEnv(t, b)
	var order []string
	env.OnActivity(a.ClaimUploads, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.ClaimUploadsInput) (contract.ClaimUploadsResult, error) {
			order = append(order, "claim")
			return contract.ClaimUploadsResult{Claimed: 1}, nil
		})
	closes := mockOutbox(env, a, []string{key}, nil)
	env.ExecuteWorkflow(workflows.PurgeAssets, workflows.AssetPurgeInput{PurgeID: testPurge.PurgeID, Kind: workflows.PurgeKindUpload, IntegrationID: testIntegration})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"claim"}, order)
	require.Zero(t, b.Len())
	require.Equal(t, []contract.ClosePurgeInput{{PurgeID: testPurge.PurgeID, Deleted: 1}}, *closes)
}

// TestPurgeAssetsOfAClosedUploadRowDoesNothing: a row another run closed is left alone.
func TestPurgeAssetsOfAClosedUploadRowDoesNothing(t *testing.T) {
	b := &activitiestest.Bucket{}
	env, a := newEnv(t, b)
	env.OnActivity(a.ClaimUploads, mock.Anything, mock.Anything).Return(contract.ClaimUploadsResult{Closed: true}, nil)
	env.ExecuteWorkflow(workflows.PurgeAssets, workflows.AssetPurgeInput{PurgeID: testPurge.PurgeID, Kind: workflows.PurgeKindUpload, IntegrationID: testIntegration})
	var res workflows.PurgeResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.True(t, res.AlreadyClosed)
	require.Empty(t, b.Deletes())
}

// TestPurgeAssetsDeletesObjectsBeforeViews: a scene purge removes the objects even while the
// view store fails, keeps retrying the views, and closes the row only once both are done.
func TestPurgeAssetsDeletesObjectsBeforeViews(t *testing.T) {
	b := &activitiestest.Bucket{}
	folder := testOwner + "lod_folder/t2/"
	b.Put(objectKeys(folder, 1200)...)
	env, a := newEnv(t, b)
	closes := mockOutbox(env, a, nil, []string{folder})
	attempts := 0
	env.OnActivity(a.DeleteViews, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.DeleteViewsInput) (contract.DeleteViewsResult, error) {
			attempts++
			require.Equal(t, []string{"dddddddddddddddddddddddd"}, in.SceneIDs)
			require.Zero(t, b.Len(), "the objects went first")
			require.Empty(t, *closes, "the row is still open")
			if attempts < 3 {
				return contract.DeleteViewsResult{}, errors.New("clickhouse down")
			}
			return contract.DeleteViewsResult{}, nil
		})
	env.ExecuteWorkflow(workflows.PurgeAssets, workflows.AssetPurgeInput{PurgeID: testPurge.PurgeID, Kind: workflows.PurgeKindScene, IntegrationID: testIntegration,
		SceneID: "dddddddddddddddddddddddd"})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 3, attempts)
	require.Equal(t, []contract.ClosePurgeInput{{PurgeID: testPurge.PurgeID, Deleted: 1200}}, *closes)
}

func TestPurgeAssetsRejectsUnknownKinds(t *testing.T) {
	env, _ := newEnv(t, &activitiestest.Bucket{})
	env.ExecuteWorkflow(workflows.PurgeAssets, workflows.AssetPurgeInput{PurgeID: testPurge.PurgeID, Kind: workflows.PurgeKindCustomer, IntegrationID: testIntegration})
	require.Error(t, env.GetWorkflowError())
}
