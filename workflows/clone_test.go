package workflows

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

var testClone = CloneInput{SplatID: "cccccccccccccccccccccccc", SourceSplatID: "ssssssssssssssssssssssss"[:24],
	IntegrationID: testIntegration, AccountID: "aaaaaaaaaaaaaaaaaaaaaaaa", OwnerID: testRecord,
	ExternalUserID: "customer-1", ClonedAt: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC),
	AbandonAfter: 3 * time.Minute, Concurrency: 8}

// testUsage is the storage meter FinalizeClone answers with (10 of 100 bytes used).
var testUsage = contract.Usage{UsedBytes: 10, LimitBytes: 100, RemainingBytes: 90, PercentUsed: 10}

var testPlan = contract.ClonePlan{Objects: []contract.ObjectCopy{{Src: "i/x/u/y/splat-file/t/a.ply", Dst: "i/x/u/z/clone/c/splat-file/t/a.ply", Size: 10}}}

// cloneEnv is a clone job on the test clock with its four activities mocked; each records its
// calls, and a test replaces the behaviour it is about.
type cloneEnv struct {
	*testsuite.TestWorkflowEnvironment
	a                                   *fakeActivities
	prepares, copies, finals, rollbacks int
	prepareErr, copyErr, finalErr       error
}

// newCloneEnv mocks the activities; the copy takes copyTakes on the test clock (or until it
// is canceled).
func newCloneEnv(t *testing.T, copyTakes ...time.Duration) *cloneEnv {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(quiet()))
	e := &cloneEnv{TestWorkflowEnvironment: s.NewTestWorkflowEnvironment(), a: &fakeActivities{}}
	e.SetWorkerOptions(slowMachine)
	e.RegisterActivity(e.a)
	Register(e)
	e.OnActivity(e.a.PrepareClone, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.PrepareCloneInput) (contract.PrepareCloneResult, error) {
			e.prepares++
			require.Equal(t, testClone.SplatID, in.SplatID)
			if e.prepareErr != nil {
				return contract.PrepareCloneResult{}, e.prepareErr
			}
			return contract.PrepareCloneResult{Bytes: 10, TotalObjects: 1, Plan: testPlan}, nil
		})
	copyMock := e.OnActivity(e.a.CopyCloneObjects, mock.Anything, mock.Anything)
	if len(copyTakes) > 0 {
		copyMock = copyMock.After(copyTakes[0])
	}
	copyMock.Return(
		func(ctx context.Context, in contract.CopyCloneInput) (contract.CopyCloneResult, error) {
			e.copies++
			require.Equal(t, testPlan, in.Plan)
			require.Equal(t, objectkeys.CloneFolder(testIntegration, testRecord, testClone.SplatID), in.Prefix)
			if e.copyErr != nil {
				err := e.copyErr
				if e.copies > 1 {
					err = nil // a retry after a crash succeeds
				}
				return contract.CopyCloneResult{}, err
			}
			return contract.CopyCloneResult{Copied: 1}, ctx.Err()
		})
	e.OnActivity(e.a.FinalizeClone, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.FinalizeCloneInput) (contract.FinalizeCloneResult, error) {
			e.finals++
			if e.finalErr != nil {
				return contract.FinalizeCloneResult{}, e.finalErr
			}
			return contract.FinalizeCloneResult{SplatID: in.SplatID, Usage: testUsage}, nil
		})
	e.OnActivity(e.a.RollbackClone, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.RollbackCloneInput) (contract.RollbackCloneResult, error) {
			e.rollbacks++
			// Message is why the job failed (clone.failed's), which each test's failure sets.
			require.NotEmpty(t, in.Message)
			in.Message = ""
			require.Equal(t, contract.RollbackCloneInput{SplatID: testClone.SplatID, IntegrationID: testIntegration, OwnerID: testRecord,
				SourceSplatID: testClone.SourceSplatID}, in)
			return contract.RollbackCloneResult{Released: 10}, nil
		})
	return e
}

func clientErr(e *apperr.Error) error {
	return contract.ClientError(contract.ClientErrorDetails{Status: e.Status, Message: e.Message, Extra: e.Extra})
}

func TestCloneSucceeds(t *testing.T) {
	e := newCloneEnv(t)
	e.ExecuteWorkflow(CloneSceneWorkflow, testClone)
	require.True(t, e.IsWorkflowCompleted())
	require.NoError(t, e.GetWorkflowError())
	var res CloneResult
	require.NoError(t, e.GetWorkflowResult(&res))
	require.Equal(t, CloneResult{SplatID: testClone.SplatID, SourceSplatID: testClone.SourceSplatID, Usage: testUsage}, res)
	require.Equal(t, [4]int{1, 1, 1, 0}, [4]int{e.prepares, e.copies, e.finals, e.rollbacks})
}

// TestCloneFailureRollsBack fails each step in turn: the job rolls back once, runs nothing after
// the failed step, and fails with the step's client envelope (or the infrastructure error).
func TestCloneFailureRollsBack(t *testing.T) {
	quotaErr := apperr.New(http.StatusRequestEntityTooLarge, "storage quota exceeded").With("code", "STORAGE_QUOTA_EXCEEDED")
	missing := apperr.Conflict("source files missing").With("code", "SOURCE_FILES_MISSING")
	gone := apperr.NotFound("external user not found")
	tests := []struct {
		name  string
		set   func(e *cloneEnv)
		want  *apperr.Error
		calls [4]int
	}{
		{"prepare: quota", func(e *cloneEnv) { e.prepareErr = clientErr(quotaErr) }, quotaErr, [4]int{1, 0, 0, 1}},
		{"copy: source files missing", func(e *cloneEnv) { e.copyErr = clientErr(missing) }, missing, [4]int{1, 1, 0, 1}},
		{"finalize: customer deleted", func(e *cloneEnv) { e.finalErr = clientErr(gone) }, gone, [4]int{1, 1, 1, 1}},
		{"finalize: retries exhausted", func(e *cloneEnv) { e.finalErr = errors.New("database down") }, nil, [4]int{1, 1, 8, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newCloneEnv(t)
			tt.set(e)
			e.ExecuteWorkflow(CloneSceneWorkflow, testClone)
			require.True(t, e.IsWorkflowCompleted())
			err := e.GetWorkflowError()
			require.Error(t, err)
			got := contract.ClientErrorOf(err)
			if tt.want == nil {
				require.Nil(t, got, "an infrastructure failure is not a client error")
				require.ErrorContains(t, err, "database down")
			} else {
				require.NotNil(t, got, "%v", err)
				require.Equal(t, tt.want.Status, got.Status)
				require.Equal(t, tt.want.Extra["code"], got.Extra["code"])
			}
			require.Equal(t, tt.calls, [4]int{e.prepares, e.copies, e.finals, e.rollbacks})
		})
	}
}

// TestCloneResumesAfterACrash: a copy attempt that dies (its worker crashed) is retried, and
// the job completes without a rollback.
func TestCloneResumesAfterACrash(t *testing.T) {
	e := newCloneEnv(t)
	e.copyErr = errors.New("the worker died mid-copy")
	e.ExecuteWorkflow(CloneSceneWorkflow, testClone)
	require.NoError(t, e.GetWorkflowError())
	require.Equal(t, [4]int{1, 2, 1, 0}, [4]int{e.prepares, e.copies, e.finals, e.rollbacks})
}

// TestCloneAbandonedWithoutPolls: a copy still running three minutes after the last poll is
// canceled and rolled back; the job fails with 409 CLONE_ABANDONED.
func TestCloneAbandonedWithoutPolls(t *testing.T) {
	e := newCloneEnv(t, time.Hour)
	began := time.Now()
	e.ExecuteWorkflow(CloneSceneWorkflow, testClone)
	require.Less(t, time.Since(began), 10*time.Second, "minutes pass on the test clock")
	require.True(t, e.IsWorkflowCompleted())
	got := contract.ClientErrorOf(e.GetWorkflowError())
	require.NotNil(t, got, "%v", e.GetWorkflowError())
	require.Equal(t, http.StatusConflict, got.Status)
	require.Equal(t, ErrCloneAbandoned, got.Extra["code"])
	require.Equal(t, 0, e.finals)
	require.Equal(t, 1, e.rollbacks)
}

// TestClonePollsKeepTheJobAlive: polls every two minutes keep a ten-minute copy from being
// abandoned.
func TestClonePollsKeepTheJobAlive(t *testing.T) {
	e := newCloneEnv(t, 10*time.Minute)
	for at := 2 * time.Minute; at < 12*time.Minute; at += 2 * time.Minute {
		e.RegisterDelayedCallback(func() { e.SignalWorkflow(ClonePollSignal, nil) }, at)
	}
	e.ExecuteWorkflow(CloneSceneWorkflow, testClone)
	require.NoError(t, e.GetWorkflowError())
	require.Equal(t, [4]int{1, 1, 1, 0}, [4]int{e.prepares, e.copies, e.finals, e.rollbacks})
}

func TestCloneRejectsIncompleteInput(t *testing.T) {
	e := newCloneEnv(t)
	in := testClone
	in.AbandonAfter = 0
	e.ExecuteWorkflow(CloneSceneWorkflow, in)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(e.GetWorkflowError(), &ae))
	require.Equal(t, contract.ErrBadInput, ae.Type())
	require.Equal(t, 0, e.prepares)
}

// TestPollSignalsAtMostOncePerInterval checks a process forwards one poll of a job per
// pollSignalEvery (other jobs unaffected), that a failed signal is retried by the next poll, and
// that finished jobs' records are pruned.
func TestPollSignalsAtMostOncePerInterval(t *testing.T) {
	s := &signalTimes{last: map[string]time.Time{}}
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	require.True(t, s.due("a", t0))
	require.False(t, s.due("a", t0.Add(100*time.Millisecond)))
	require.False(t, s.due("a", t0.Add(pollSignalEvery-time.Millisecond)))
	require.True(t, s.due("b", t0.Add(100*time.Millisecond)), "another job is signalled on its own clock")
	require.True(t, s.due("a", t0.Add(pollSignalEvery)))
	s.forget("a")
	require.True(t, s.due("a", t0.Add(pollSignalEvery+time.Millisecond)), "a failed signal is sent again by the next poll")
	require.True(t, s.due("c", t0.Add(3*time.Minute)))
	require.Equal(t, map[string]time.Time{"c": t0.Add(3 * time.Minute)}, s.last, "jobs not polled for a minute are forgotten")
}
