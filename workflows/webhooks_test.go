package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

func TestWebhookBackoff(t *testing.T) {
	prev := time.Duration(0)
	for n := 1; n <= 30; n++ {
		d := WebhookBackoff("d1", n)
		base := webhookFirstDelay << min(n-1, 20)
		base = min(base, webhookMaxDelay)
		require.GreaterOrEqual(t, d, base*3/4, "attempt %d", n)
		require.Less(t, d, base*5/4, "attempt %d", n)
		require.Equal(t, d, WebhookBackoff("d1", n), "deterministic: replays draw the same jitter")
		if n < 8 {
			require.Greater(t, d, prev, "grows")
		}
		prev = d
	}
	require.NotEqual(t, WebhookBackoff("d1", 3), WebhookBackoff("d2", 3), "jitter spreads deliveries apart")
}

// TestWebhookDeliveryRetriesForADay runs a delivery whose receiver never answers 2xx, on the
// time-skipping testsuite: it is attempted with growing waits until at least 24 h have passed
// since the first attempt, the last attempt is marked final, and the delivery fails.
func TestWebhookDeliveryRetriesForADay(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(slowMachine)
	env.RegisterWorkflowWithOptions(WebhookDelivery, workflow.RegisterOptions{Name: WebhookDeliveryWorkflow})
	var a *fakeActivities
	var times []time.Time
	var finals []bool
	env.OnActivity(a.AttemptWebhookDelivery, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.AttemptWebhookInput) (contract.AttemptWebhookResult, error) {
			times = append(times, env.Now())
			finals = append(finals, in.Final)
			if in.Final {
				return contract.AttemptWebhookResult{Outcome: contract.WebhookFailed, StatusCode: 500, Attempts: len(times)}, nil
			}
			require.Greater(t, in.RetryIn, time.Duration(0))
			return contract.AttemptWebhookResult{Outcome: contract.WebhookRetry, StatusCode: 500, Attempts: len(times)}, nil
		})
	env.ExecuteWorkflow(WebhookDelivery, WebhookDeliveryInput{DeliveryID: "0123456789abcdef01234567", IntegrationID: "i", WebhookID: "w", Type: "splat.created"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res WebhookDeliveryResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.WebhookFailed, res.Outcome)
	total := times[len(times)-1].Sub(times[0])
	require.GreaterOrEqual(t, total, WebhookRetryWindow, "retried for at least 24 h")
	require.Less(t, total, WebhookRetryWindow+3*time.Hour, "and not much longer")
	require.True(t, finals[len(finals)-1])
	for _, f := range finals[:len(finals)-1] {
		require.False(t, f)
	}
	for i := 2; i < len(times); i++ {
		require.GreaterOrEqual(t, times[i].Sub(times[i-1]), time.Duration(float64(times[i-1].Sub(times[i-2]))*0.5),
			"waits do not shrink (beyond jitter)")
	}
	t.Logf("%d attempts over %s", len(times), total)
}

// TestWebhookDeliveryWaitsForASlotAndStopsOnSuccess: busy answers (every slot of the endpoint
// taken) are waited out without counting as attempts, and the first 2xx ends the delivery.
func TestWebhookDeliveryWaitsForASlotAndStopsOnSuccess(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(slowMachine)
	env.RegisterWorkflowWithOptions(WebhookDelivery, workflow.RegisterOptions{Name: WebhookDeliveryWorkflow})
	var a *fakeActivities
	calls := 0
	var retryIns []time.Duration
	env.OnActivity(a.AttemptWebhookDelivery, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.AttemptWebhookInput) (contract.AttemptWebhookResult, error) {
			calls++
			retryIns = append(retryIns, in.RetryIn)
			switch {
			case calls <= 5:
				return contract.AttemptWebhookResult{Outcome: contract.WebhookBusy}, nil
			case calls == 6:
				return contract.AttemptWebhookResult{Outcome: contract.WebhookRetry, StatusCode: 503, Attempts: 1}, nil
			default:
				return contract.AttemptWebhookResult{Outcome: contract.WebhookDelivered, StatusCode: 200, Attempts: 2}, nil
			}
		})
	env.ExecuteWorkflow(WebhookDelivery, WebhookDeliveryInput{DeliveryID: "d", IntegrationID: "i", WebhookID: "w", Type: "splat.created"})
	require.NoError(t, env.GetWorkflowError())
	var res WebhookDeliveryResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.WebhookDelivered, res.Outcome)
	require.Equal(t, 7, calls)
	// Busy waits did not count: the 6th call is still the first attempt's backoff.
	require.Equal(t, WebhookBackoff("d", 1), retryIns[5])
	require.Equal(t, WebhookBackoff("d", 2), retryIns[6])
}

// TestWebhookDeliveryWakesWhenASlotIsFreed: a delivery whose endpoint's slots are all taken
// waits for the slot-free signal (sent by the attempt that frees one) and tries again at once,
// not after its fallback wait; without a signal it tries again after webhookSlotWait.
func TestWebhookDeliveryWakesWhenASlotIsFreed(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(slowMachine)
	env.RegisterWorkflowWithOptions(WebhookDelivery, workflow.RegisterOptions{Name: WebhookDeliveryWorkflow})
	var a *fakeActivities
	var at []time.Time
	env.OnActivity(a.AttemptWebhookDelivery, mock.Anything, mock.Anything).Return(
		func(context.Context, contract.AttemptWebhookInput) (contract.AttemptWebhookResult, error) {
			at = append(at, env.Now())
			if len(at) <= 2 {
				return contract.AttemptWebhookResult{Outcome: contract.WebhookBusy}, nil
			}
			return contract.AttemptWebhookResult{Outcome: contract.WebhookDelivered, StatusCode: 204, Attempts: 1}, nil
		})
	// The first wait ends by its timer (no one signals); the second by a signal 3 s in.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(WebhookSlotSignal, nil) }, webhookSlotWait+3*time.Second)
	env.ExecuteWorkflow(WebhookDelivery, WebhookDeliveryInput{DeliveryID: "d", IntegrationID: "i", WebhookID: "w", Type: "splat.created"})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, at, 3)
	require.Equal(t, webhookSlotWait, at[1].Sub(at[0]), "no signal: the fallback wait")
	require.Equal(t, 3*time.Second, at[2].Sub(at[1]), "the signal ends the wait")
}

// TestWebhookDeliveryRedeliverSignalCutsTheWait: a redeliver signal during a backoff attempts at
// once instead of waiting.
func TestWebhookDeliveryRedeliverSignalCutsTheWait(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(slowMachine)
	env.RegisterWorkflowWithOptions(WebhookDelivery, workflow.RegisterOptions{Name: WebhookDeliveryWorkflow})
	var a *fakeActivities
	var times []time.Time
	env.OnActivity(a.AttemptWebhookDelivery, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.AttemptWebhookInput) (contract.AttemptWebhookResult, error) {
			times = append(times, env.Now())
			if len(times) < 4 {
				return contract.AttemptWebhookResult{Outcome: contract.WebhookRetry, StatusCode: 500}, nil
			}
			return contract.AttemptWebhookResult{Outcome: contract.WebhookDelivered, StatusCode: 200}, nil
		})
	start := env.Now()
	// The fourth attempt is due ~35 s after the first; the signal at 20 s brings it forward.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(WebhookRedeliverSignal, nil) }, 20*time.Second)
	env.ExecuteWorkflow(WebhookDelivery, WebhookDeliveryInput{DeliveryID: "d", IntegrationID: "i", WebhookID: "w", Type: "splat.created"})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, times, 4)
	require.Less(t, times[3].Sub(start), 30*time.Second)
}

// TestWebhookDeliveryAfterADirectAttempt: a delivery handed off after its failed direct attempt
// (Attempt 1, Delay = the first backoff) waits that backoff before its own first attempt, which
// counts as the second (its retry wait is the second backoff); a redeliver signal cuts the
// initial wait short too.
func TestWebhookDeliveryAfterADirectAttempt(t *testing.T) {
	for _, signal := range []bool{false, true} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(slowMachine)
		env.RegisterWorkflowWithOptions(WebhookDelivery, workflow.RegisterOptions{Name: WebhookDeliveryWorkflow})
		var a *fakeActivities
		var at []time.Time
		var retryIns []time.Duration
		env.OnActivity(a.AttemptWebhookDelivery, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in contract.AttemptWebhookInput) (contract.AttemptWebhookResult, error) {
				at = append(at, env.Now())
				retryIns = append(retryIns, in.RetryIn)
				require.False(t, in.Direct, "a workflow's attempts are not direct")
				if len(at) == 1 {
					return contract.AttemptWebhookResult{Outcome: contract.WebhookRetry, StatusCode: 503, Attempts: 2}, nil
				}
				return contract.AttemptWebhookResult{Outcome: contract.WebhookDelivered, StatusCode: 200, Attempts: 3}, nil
			})
		start := env.Now()
		first := WebhookBackoff("d", 1)
		if signal {
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(WebhookRedeliverSignal, nil) }, time.Second)
		}
		env.ExecuteWorkflow(WebhookDelivery, WebhookDeliveryInput{DeliveryID: "d", IntegrationID: "i", WebhookID: "w",
			Type: "splat.created", Attempt: 1, Delay: first})
		require.NoError(t, env.GetWorkflowError())
		require.Len(t, at, 2)
		if signal {
			require.Equal(t, time.Second, at[0].Sub(start), "the signal ends the initial wait")
		} else {
			require.Equal(t, first, at[0].Sub(start), "the first backoff before the workflow's first attempt")
		}
		require.Equal(t, WebhookBackoff("d", 2), retryIns[0], "the workflow's first attempt is the delivery's second")
		require.Equal(t, WebhookBackoff("d", 2), at[1].Sub(at[0]))
	}
}

// TestReplayWebhookDelivery replays deliveries recorded from real runs (the e2e test
// TestWebhookReceiverDownThenUp with SPLATHOST_RECORD_HISTORY=1): failed attempts, backoff
// timers, then success, from the code of before the direct first attempt (the workflow made
// every attempt) and after it (the workflow starts with the first backoff). A change that would
// break running deliveries fails here.
func TestReplayWebhookDelivery(t *testing.T) {
	for _, f := range []string{"webhook_delivery_retried.json", "webhook_delivery_handed_off.json"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(WebhookDelivery, workflow.RegisterOptions{Name: WebhookDeliveryWorkflow})
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), "testdata/"+f), f)
	}
}
