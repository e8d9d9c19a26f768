package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

const renditionScene = "eeeeeeeeeeeeeeeeeeeeeeee"

var renditionFolder = objectkeys.RenditionFolder(testIntegration, "dddddddddddddddddddddddd", renditionScene)

func newRenditionEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeActivities) {
	t.Helper()
	env, a := newEnv(t)
	RegisterMedia(env)
	env.OnActivity(a.PrepareRendition, mock.Anything, mock.Anything).Return(contract.PrepareRenditionResult{
		RenditionSource: contract.RenditionSource{SourceKey: testOwner + "splat_file/t1/scene.ply", Format: ".ply",
			Folder: renditionFolder, Poster: true}}, nil)
	return env, a
}

// recordFinishes records FinishRendition's inputs and answers that the scene took them.
func recordFinishes(env *testsuite.TestWorkflowEnvironment, a *fakeActivities) *[]contract.FinishRenditionInput {
	var got []contract.FinishRenditionInput
	env.OnActivity(a.FinishRendition, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.FinishRenditionInput) (contract.FinishRenditionResult, error) {
			got = append(got, in)
			return contract.FinishRenditionResult{Recorded: true}, nil
		})
	return &got
}

// TestSceneRenditionsRetriesTheConversion: an infrastructure failure (the store, a lost worker)
// is retried; the second attempt's result is recorded as ready, with the poster.
func TestSceneRenditionsRetriesTheConversion(t *testing.T) {
	env, a := newRenditionEnv(t)
	attempts := 0
	env.OnActivity(a.ConvertRendition, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.ConvertRenditionInput) (contract.ConvertRenditionResult, error) {
			attempts++
			require.Equal(t, renditionFolder, in.Folder)
			require.True(t, in.Poster)
			if attempts == 1 {
				return contract.ConvertRenditionResult{}, errors.New("storing: connection reset")
			}
			return contract.ConvertRenditionResult{Type: "sog", Key: renditionFolder + "scene.sog", Bytes: 1000, Files: 1,
				Gaussians: 5000, PosterKey: renditionFolder + "poster.jpg"}, nil
		})
	finishes := recordFinishes(env, a)
	env.ExecuteWorkflow(SceneRenditions, RenditionInput{SceneID: renditionScene, IntegrationID: testIntegration})
	require.NoError(t, env.GetWorkflowError())
	var res RenditionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, RenditionResult{State: "ready", Type: "sog", Bytes: 1000, Gaussians: 5000, Poster: true}, res)
	require.Equal(t, 2, attempts)
	require.Len(t, *finishes, 1)
	require.Equal(t, "ready", (*finishes)[0].State)
	require.Equal(t, renditionFolder+"scene.sog", (*finishes)[0].Result.Key)
}

// TestSceneRenditionsPosterOnly: a .sog upload (or a LOD folder) without image gets its poster
// alone and is recorded skipped with it: no rendition.
func TestSceneRenditionsPosterOnly(t *testing.T) {
	env, a := newEnv(t)
	RegisterMedia(env)
	env.OnActivity(a.PrepareRendition, mock.Anything, mock.Anything).Return(contract.PrepareRenditionResult{
		RenditionSource: contract.RenditionSource{SourceKey: testOwner + "sealed-splat_file/t1/scene.sog", Format: ".sog",
			Folder: renditionFolder, Poster: true, PosterOnly: true}}, nil)
	env.OnActivity(a.ConvertRendition, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.ConvertRenditionInput) (contract.ConvertRenditionResult, error) {
			require.True(t, in.PosterOnly)
			return contract.ConvertRenditionResult{PosterKey: renditionFolder + "poster.jpg"}, nil
		})
	finishes := recordFinishes(env, a)
	env.ExecuteWorkflow(SceneRenditions, RenditionInput{SceneID: renditionScene, IntegrationID: testIntegration})
	require.NoError(t, env.GetWorkflowError())
	var res RenditionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, RenditionResult{State: "skipped", Poster: true}, res)
	require.Len(t, *finishes, 1)
	require.Equal(t, "skipped", (*finishes)[0].State)
	require.Equal(t, renditionFolder+"poster.jpg", (*finishes)[0].Result.PosterKey)
}

// TestSceneRenditionsRecordsAnInputFailure: a corrupt scene is never retried; the scene records
// failed with the converter's message, and the workflow fails so operators see it.
func TestSceneRenditionsRecordsAnInputFailure(t *testing.T) {
	env, a := newRenditionEnv(t)
	attempts := 0
	env.OnActivity(a.ConvertRendition, mock.Anything, mock.Anything).Return(
		func(context.Context, contract.ConvertRenditionInput) (contract.ConvertRenditionResult, error) {
			attempts++
			return contract.ConvertRenditionResult{}, temporal.NewNonRetryableApplicationError(
				"the file is shorter than its header says", contract.ErrRenditionInput, nil)
		})
	finishes := recordFinishes(env, a)
	env.ExecuteWorkflow(SceneRenditions, RenditionInput{SceneID: renditionScene, IntegrationID: testIntegration})
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, err.Error(), "shorter than its header")
	require.Equal(t, 1, attempts)
	require.Equal(t, []contract.FinishRenditionInput{{SceneID: renditionScene, Folder: renditionFolder, State: "failed",
		Message: "the file is shorter than its header says"}}, *finishes)
}

// TestSceneRenditionsGivesUpAfterRetries: a failure that outlasts the retries records a generic
// message (details stay in the history) rather than leaving the scene pending for ever.
func TestSceneRenditionsGivesUpAfterRetries(t *testing.T) {
	env, a := newRenditionEnv(t)
	attempts := 0
	env.OnActivity(a.ConvertRendition, mock.Anything, mock.Anything).Return(
		func(context.Context, contract.ConvertRenditionInput) (contract.ConvertRenditionResult, error) {
			attempts++
			return contract.ConvertRenditionResult{}, errors.New("object store unavailable")
		})
	finishes := recordFinishes(env, a)
	env.ExecuteWorkflow(SceneRenditions, RenditionInput{SceneID: renditionScene, IntegrationID: testIntegration})
	require.Error(t, env.GetWorkflowError())
	require.Equal(t, int(convertRetry.MaximumAttempts), attempts)
	require.Len(t, *finishes, 1)
	require.Equal(t, "failed", (*finishes)[0].State)
	require.Equal(t, "the conversion failed; an operator can retry it", (*finishes)[0].Message)
}

// TestSceneRenditionsSkips: nothing to do (a deleted scene, a .sog upload, another run done)
// converts nothing and records nothing.
func TestSceneRenditionsSkips(t *testing.T) {
	env, a := newEnv(t)
	RegisterMedia(env)
	env.OnActivity(a.PrepareRendition, mock.Anything, mock.Anything).Return(
		contract.PrepareRenditionResult{Skip: true, Reason: "the scene was deleted"}, nil)
	env.ExecuteWorkflow(SceneRenditions, RenditionInput{SceneID: renditionScene})
	var res RenditionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, RenditionResult{State: "skipped", Message: "the scene was deleted"}, res)
}

// TestSceneRenditionsOfADeletedScene: a scene deleted during the conversion takes no outcome
// (FinishRendition removed the objects); the rendition ends skipped, not ready.
func TestSceneRenditionsOfADeletedScene(t *testing.T) {
	env, a := newRenditionEnv(t)
	env.OnActivity(a.ConvertRendition, mock.Anything, mock.Anything).Return(
		contract.ConvertRenditionResult{Type: "sog", Key: renditionFolder + "scene.sog", Bytes: 10, Files: 1, Gaussians: 1}, nil)
	env.OnActivity(a.FinishRendition, mock.Anything, mock.Anything).Return(contract.FinishRenditionResult{Removed: 1}, nil)
	env.ExecuteWorkflow(SceneRenditions, RenditionInput{SceneID: renditionScene})
	var res RenditionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "skipped", res.State)
}

// TestRedriveRenditionsStartsPendingScenes: every pending scene the outbox lists gets its
// rendition started as a child under the scene's business id.
func TestRedriveRenditionsStartsPendingScenes(t *testing.T) {
	env, a := newEnv(t)
	RegisterMedia(env)
	env.OnActivity(a.PendingRenditions, mock.Anything, mock.Anything).Return(contract.PendingRenditionsResult{Scenes: []contract.PendingRendition{
		{SceneID: "aaaaaaaaaaaaaaaaaaaaaaa1", IntegrationID: testIntegration},
		{SceneID: "aaaaaaaaaaaaaaaaaaaaaaa2", IntegrationID: testIntegration},
	}}, nil)
	var started []string
	env.OnWorkflow(SceneRenditionsWorkflow, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in RenditionInput) (RenditionResult, error) {
			require.Equal(t, RenditionWorkflowID(in.SceneID), workflow.GetInfo(ctx).WorkflowExecution.ID)
			require.Equal(t, []string{in.SceneID}, saValues(t, ctx, SASplatID.GetName()))
			started = append(started, in.SceneID)
			return RenditionResult{}, workflow.Sleep(ctx, time.Hour)
		})
	env.ExecuteWorkflow(RedriveRenditions, RenditionRedriveInput{})
	var res RenditionRedriveResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 2, res.Started)
	require.ElementsMatch(t, []string{"aaaaaaaaaaaaaaaaaaaaaaa1", "aaaaaaaaaaaaaaaaaaaaaaa2"}, started)
}

// TestReplaySceneRenditions replays histories recorded from real runs (the e2e tests
// TestRenditionOfATrainingPLY and TestRenditionOfACorruptPLYFails with
// SPLATHOST_RECORD_HISTORY=1): a ready rendition and a failed one. A change that would break
// running renditions fails here: make it through workflow.GetVersion.
func TestReplaySceneRenditions(t *testing.T) {
	for _, f := range []string{"testdata/scene_renditions.json", "testdata/scene_renditions_failed.json"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(SceneRenditions, workflow.RegisterOptions{Name: SceneRenditionsWorkflow})
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), f), f)
	}
}
