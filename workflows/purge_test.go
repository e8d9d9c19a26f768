package workflows

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
)

// The purge workflows' runs against the real delete activities over an in-memory bucket are in
// internal/flowtest; what is left here is the workflow's own settings and the helpers the other
// workflow tests share.

const (
	testIntegration = "aaaaaaaaaaaaaaaaaaaaaaaa"
	testRecord      = "bbbbbbbbbbbbbbbbbbbbbbbb"
	testOwner       = "i/" + testIntegration + "/u/" + testRecord + "/"
)

var testPurge = PurgeInput{PurgeID: "cccccccccccccccccccccccc", IntegrationID: testIntegration,
	OwnerID: testRecord, ExternalUserID: "customer-1"}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newEnv is a workflow test environment with the contract's fake activities registered: a test
// mocks the ones its workflow calls (by method value, a.Name), and any other call fails it.
func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeActivities) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(quiet()))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(slowMachine)
	a := &fakeActivities{}
	env.RegisterActivity(a)
	Register(env)
	return env, a
}

func TestPurgeWorkflowIDIsTheBusinessKey(t *testing.T) {
	require.Equal(t, "purge-customer/"+testIntegration+"/"+testRecord, PurgeWorkflowID(testIntegration, testRecord))
}

func TestPurgeBackoffIsCapped(t *testing.T) {
	require.Zero(t, deleteOptions.RetryPolicy.MaximumAttempts, "retried until done")
	require.Equal(t, 5*time.Minute, deleteOptions.RetryPolicy.MaximumInterval)
	require.NotZero(t, deleteOptions.HeartbeatTimeout)
}
