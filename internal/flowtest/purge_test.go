package flowtest

import (
	"context"
	"errors"
	"fmt"
	"go.temporal.io/sdk/worker"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/activities/activitiestest"
	"github.com/splathost/splathost/workflows"
	"github.com/splathost/splathost/workflows/contract"
)

const (
	testIntegration = "aaaaaaaaaaaaaaaaaaaaaaaa"
	testRecord      = "bbbbbbbbbbbbbbbbbbbbbbbb"
	testOwner       = "i/" + testIntegration + "/u/" + testRecord + "/"
)

var testPurge = workflows.PurgeInput{PurgeID: "cccccccccccccccccccccccc", IntegrationID: testIntegration,
	OwnerID: testRecord, ExternalUserID: "customer-1"}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newEnv is a workflow test environment with the real activities over an in-memory bucket; tests
// mock the Postgres activities (LoadPurge, ClosePurge, …) they need.
func newEnv(t *testing.T, b *activitiestest.Bucket) (*testsuite.TestWorkflowEnvironment, *activities.Activities) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(quiet()))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(slowMachine)
	a := &activities.Activities{Objects: b, Bucket: "test", Log: quiet()}
	env.RegisterActivity(a)
	workflows.Register(env)
	return env, a
}

func objectKeys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}

// mockOutbox serves keys then prefixes from LoadPurge as the real activity would, and records
// ClosePurge calls.
func mockOutbox(env *testsuite.TestWorkflowEnvironment, a *activities.Activities, keys, prefixes []string) *[]contract.ClosePurgeInput {
	all := append(append([]string{}, keys...), prefixes...)
	env.OnActivity(a.LoadPurge, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.LoadPurgeInput) (contract.LoadPurgeResult, error) {
			end := min(in.Offset+in.Limit, len(all))
			out := contract.LoadPurgeResult{Next: end, Last: end == len(all)}
			for _, x := range all[in.Offset:end] {
				if len(out.Keys)+len(out.Prefixes) < len(keys)-in.Offset {
					out.Keys = append(out.Keys, x)
				} else {
					out.Prefixes = append(out.Prefixes, x)
				}
			}
			return out, nil
		})
	var closes []contract.ClosePurgeInput
	env.OnActivity(a.ClosePurge, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.ClosePurgeInput) (contract.ClosePurgeResult, error) {
			closes = append(closes, in)
			return contract.ClosePurgeResult{Closed: len(closes) == 1}, nil
		})
	return &closes
}

func TestPurgeDeletesEverythingAndClosesTheRow(t *testing.T) {
	b := &activitiestest.Bucket{}
	keys := objectKeys(testOwner+"splat_file/t1/", 1500) // two slices
	folder := testOwner + "lod_folder/t2/"
	b.Put(keys...)
	b.Put(objectKeys(folder, 2100)...)
	b.Put(testOwner + "splat_file/other/keep.splat")
	env, a := newEnv(t, b)
	closes := mockOutbox(env, a, keys, []string{folder})

	env.ExecuteWorkflow(workflows.PurgeCustomerAssets, testPurge)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res workflows.PurgeResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, workflows.PurgeResult{Deleted: 1500 + 2100}, res)
	require.Equal(t, 1, b.Len(), "only the object the purge did not name is left")
	require.Equal(t, []contract.ClosePurgeInput{{PurgeID: testPurge.PurgeID, Deleted: 3600}}, *closes)
}

func TestPurgeRetriesAFailedDeleteUntilItSucceeds(t *testing.T) {
	b := &activitiestest.Bucket{FailDelete: func(call int, _ []string) error {
		if call <= 2 {
			return errors.New("store unavailable")
		}
		return nil
	}}
	keys := objectKeys(testOwner+"splat_file/t1/", 3)
	b.Put(keys...)
	env, a := newEnv(t, b)
	closes := mockOutbox(env, a, keys, nil)
	var attempts []int32
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "DeleteObjects" {
			attempts = append(attempts, info.Attempt)
		}
	})

	env.ExecuteWorkflow(workflows.PurgeCustomerAssets, testPurge)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int32{1, 2, 3}, attempts)
	require.Equal(t, 0, b.Len())
	require.Equal(t, []contract.ClosePurgeInput{{PurgeID: testPurge.PurgeID, Deleted: 3}}, *closes)
}

// TestPurgeResumesFromHeartbeat: the attempt that fails has deleted and heartbeated its first
// batch; the retry receives that progress and does not send the batch again.
func TestPurgeResumesFromHeartbeat(t *testing.T) {
	b := &activitiestest.Bucket{FailDelete: func(call int, _ []string) error {
		if call == 2 {
			return errors.New("connection reset")
		}
		return nil
	}}
	keys := objectKeys(testOwner+"splat_file/t1/", 1000) // one slice, two batches of the folder
	folder := testOwner + "lod_folder/t2/"
	b.Put(keys...)
	b.Put(objectKeys(folder, 1500)...)
	env, a := newEnv(t, b)
	closes := mockOutbox(env, a, keys, []string{folder})
	var beats []contract.DeleteProgress
	env.SetOnActivityHeartbeatListener(func(info *activity.Info, details converter.EncodedValues) {
		var p contract.DeleteProgress
		require.NoError(t, details.Get(&p))
		beats = append(beats, p)
	})

	env.ExecuteWorkflow(workflows.PurgeCustomerAssets, testPurge)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, contract.DeleteProgress{KeysDone: 1000, Deleted: 1000}, beats[0], "the failed attempt's progress")
	deletes := b.Deletes()
	require.Len(t, deletes, 4, "keys, failed folder page, then the folder's two pages")
	require.Equal(t, keys[0], deletes[0][0])
	for _, call := range deletes[1:] {
		require.NotEqual(t, keys[0], call[0], "the keys' batch is not sent again")
	}
	require.Equal(t, 0, b.Len())
	require.Equal(t, []contract.ClosePurgeInput{{PurgeID: testPurge.PurgeID, Deleted: 2500}}, *closes)
}

// TestPurgeActivityReceivesRecordedDetails checks the plumbing on its own: whatever an attempt
// heartbeats before failing is what the next attempt reads.
func TestPurgeActivityReceivesRecordedDetails(t *testing.T) {
	env, a := newEnv(t, &activitiestest.Bucket{})
	closes := mockOutbox(env, a, []string{testOwner + "k"}, nil)
	recorded := contract.DeleteProgress{KeysDone: 1, Deleted: 1}
	var got []any
	env.OnActivity(a.DeleteObjects, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in contract.DeleteObjectsInput) (contract.DeleteObjectsResult, error) {
			if !activity.HasHeartbeatDetails(ctx) {
				got = append(got, nil)
				activity.RecordHeartbeat(ctx, recorded)
				return contract.DeleteObjectsResult{}, errors.New("worker lost")
			}
			var p contract.DeleteProgress
			if err := activity.GetHeartbeatDetails(ctx, &p); err != nil {
				return contract.DeleteObjectsResult{}, err
			}
			got = append(got, p)
			return contract.DeleteObjectsResult{Deleted: p.Deleted}, nil
		})
	env.ExecuteWorkflow(workflows.PurgeCustomerAssets, testPurge)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []any{nil, recorded}, got)
	require.Equal(t, 1, (*closes)[0].Deleted)
}

func TestPurgeOfAClosedRowDoesNothing(t *testing.T) {
	b := &activitiestest.Bucket{}
	env, a := newEnv(t, b)
	env.OnActivity(a.LoadPurge, mock.Anything, mock.Anything).Return(contract.LoadPurgeResult{Closed: true}, nil)
	env.ExecuteWorkflow(workflows.PurgeCustomerAssets, testPurge)
	require.NoError(t, env.GetWorkflowError())
	var res workflows.PurgeResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.True(t, res.AlreadyClosed)
	require.Empty(t, b.Deletes())
}

// TestPurgeBadInputClosesTheRowWithTheFailure: a prefix the activity refuses fails the workflow
// at once (no endless retries) and closes the row, so the re-drive does not restart it forever.
func TestPurgeBadInputClosesTheRowWithTheFailure(t *testing.T) {
	b := &activitiestest.Bucket{}
	b.Put(testOwner + "x")
	env, a := newEnv(t, b)
	closes := mockOutbox(env, a, nil, []string{"i/" + testIntegration + "/"})
	env.ExecuteWorkflow(workflows.PurgeCustomerAssets, testPurge)
	err := env.GetWorkflowError()
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	require.Equal(t, contract.ErrBadInput, app.Type())
	require.Len(t, *closes, 1)
	require.Contains(t, (*closes)[0].Failure, "refusing to empty prefix")
	require.Equal(t, 1, b.Len())
	require.Empty(t, b.Lists())
}

func TestPurgeRejectsMissingIdentifiers(t *testing.T) {
	env, _ := newEnv(t, &activitiestest.Bucket{})
	env.ExecuteWorkflow(workflows.PurgeCustomerAssets, workflows.PurgeInput{PurgeID: "x"})
	require.Error(t, env.GetWorkflowError())
}

// slowMachine lets a workflow task run up to a minute before the test environment calls it a
// deadlock (the SDK's default is 1 s, which a CI machine under a CPU hog exceeded); a real
// deadlock still fails within the minute.
var slowMachine = worker.Options{DeadlockDetectionTimeout: time.Minute}
