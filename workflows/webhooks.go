package workflows

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// Search attributes of webhook deliveries, beside integrationId: an operator lists an
// endpoint's deliveries, or one event type's, in the Temporal UI.
var (
	SAWebhookID    = temporal.NewSearchAttributeKeyKeyword("webhookId")
	SAWebhookEvent = temporal.NewSearchAttributeKeyKeyword("webhookEvent")
)

// WebhookDeliveryWorkflow is the registered name of WebhookDelivery.
const WebhookDeliveryWorkflow = "WebhookDelivery"

// WebhookRedeliverSignal asks a running delivery to attempt now (POST …/redeliver).
const WebhookRedeliverSignal = "redeliver"

// WebhookSlotSignal tells a delivery waiting for one of its endpoint's slots that one came free
// (sent by the attempt that released it).
const WebhookSlotSignal = "slot-free"

// webhookSlotWait bounds a wait for a slot when no signal comes (its sender died, or woke
// another waiter): the delivery then tries again on its own.
const webhookSlotWait = 30 * time.Second

// WebhookRetryWindow is how long a delivery keeps being retried: its last attempt comes after
// at least this much time since the first (contract item 12: at least 24 h).
const WebhookRetryWindow = 24 * time.Hour

// Backoff of failed attempts: the first retry after about webhookFirstDelay, each next one
// twice as long, at most webhookMaxDelay, every delay scaled by a jitter in [0.75, 1.25) so
// receivers coming back up are not hit by every sender at the same second.
const (
	webhookFirstDelay = 5 * time.Second
	webhookMaxDelay   = 2 * time.Hour
)

// Waits while every delivery slot of the endpoint is taken (contract.WebhookBusy): short,
// growing, never counted as attempts.
const (
	webhookBusyFirst = 250 * time.Millisecond
	webhookBusyMax   = 5 * time.Second
)

// webhookHistoryLimit continues a long-waiting delivery as new before its history grows large.
const webhookHistoryLimit = 2000

// WebhookDeliveryID is the workflow id of a delivery, from its business key: one workflow per
// delivery row at a time.
func WebhookDeliveryID(deliveryID string) string { return "webhook-delivery/" + deliveryID }

// WebhookDeliveryInput names the delivery. StartedAt and Attempt carry the retry window and
// count across continue-as-new (zero on a fresh start). Delay is a wait before this run's
// first attempt: a delivery whose direct attempt (events.Dispatcher) failed starts with
// Attempt 1 and the first backoff, as if its workflow had made that attempt.
type WebhookDeliveryInput struct {
	DeliveryID    string
	IntegrationID string
	WebhookID     string
	Type          string
	StartedAt     time.Time
	Attempt       int
	Delay         time.Duration
}

// WebhookDeliveryResult is how the delivery ended.
type WebhookDeliveryResult struct {
	Outcome    string
	Attempts   int
	StatusCode int
}

// webhookAttemptOptions run one attempt: the HTTP timeout (10 s) plus the slot and the row
// updates. An infrastructure failure (database down, a worker lost mid-request) is retried by
// Temporal; the receiver's failures are the workflow's to back off from.
var webhookAttemptOptions = workflow.ActivityOptions{
	StartToCloseTimeout: contract.WebhookTimeout + 20*time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
		MaximumInterval: time.Minute, NonRetryableErrorTypes: []string{contract.ErrBadInput}},
}

// WebhookBackoff is the wait after failed attempt n (1-based) of a delivery: exponential from
// 5 s, capped at 2 h, with a jitter drawn from the delivery id and n. Drawn from the inputs,
// the jitter is the same on every replay without a side effect in the history, and still
// spreads deliveries apart.
func WebhookBackoff(deliveryID string, n int) time.Duration {
	d := webhookFirstDelay
	for i := 1; i < n && d < webhookMaxDelay; i++ {
		d *= 2
	}
	d = min(d, webhookMaxDelay)
	h := fnv.New64a()
	h.Write([]byte(deliveryID + "/" + strconv.Itoa(n)))
	f := 0.75 + 0.5*float64(h.Sum64()%10000)/10000
	return time.Duration(float64(d) * f)
}

// WebhookDelivery delivers one event to one endpoint: an attempt (contract.
// AttemptWebhookDelivery), and after a failure a durable timer of WebhookBackoff, until the
// receiver answers 2xx or WebhookRetryWindow has passed since the first attempt; the attempt
// that starts after the window is the last. A redeliver signal cuts the wait short. A delivery
// whose endpoint is gone ends at once.
func WebhookDelivery(ctx workflow.Context, in WebhookDeliveryInput) (WebhookDeliveryResult, error) {
	if in.StartedAt.IsZero() {
		in.StartedAt = workflow.Now(ctx)
	}
	redeliver := workflow.GetSignalChannel(ctx, WebhookRedeliverSignal)
	// A signal that started this run (SignalWithStart) asked for what a fresh run does anyway.
	for redeliver.ReceiveAsync(nil) {
	}
	actx := workflow.WithActivityOptions(ctx, webhookAttemptOptions)
	busy := time.Duration(0)
	slotFree := workflow.GetSignalChannel(ctx, WebhookSlotSignal)
	// Only runs started after a failed direct attempt carry a Delay, so older histories replay
	// unchanged without a version marker.
	if in.Delay > 0 {
		waitFor(ctx, in.Delay, redeliver)
		in.Delay = 0
	}
	for {
		// A wake-up that came while no slot was awaited is stale: this attempt looks anyway.
		for slotFree.ReceiveAsync(nil) {
		}
		waitSlot := false
		final := workflow.Now(ctx).Sub(in.StartedAt) >= WebhookRetryWindow
		delay := WebhookBackoff(in.DeliveryID, in.Attempt+1)
		var out contract.AttemptWebhookResult
		err := workflow.ExecuteActivity(actx, contract.AttemptWebhookDelivery,
			contract.AttemptWebhookInput{DeliveryID: in.DeliveryID, RetryIn: delay, Final: final}).Get(ctx, &out)
		if err != nil {
			var app *temporal.ApplicationError
			if errors.As(err, &app) && app.Type() == contract.ErrBadInput {
				return WebhookDeliveryResult{Outcome: contract.WebhookFailed}, err
			}
			// Retries of the activity itself ran out: count it as a failed attempt.
			workflow.GetLogger(ctx).Warn("webhook attempt failed", "delivery", in.DeliveryID, "error", err)
			out.Outcome = contract.WebhookRetry
			if final {
				return WebhookDeliveryResult{Outcome: contract.WebhookFailed, Attempts: in.Attempt}, err
			}
		}
		switch out.Outcome {
		case contract.WebhookDelivered, contract.WebhookFailed, contract.WebhookGone:
			// A redelivery asked for while this attempt ran made the row pending again: honour it
			// rather than end with the signal unread.
			if redeliver.ReceiveAsync(nil) {
				in.Attempt, in.StartedAt, busy = 0, workflow.Now(ctx), 0
				continue
			}
			return WebhookDeliveryResult{Outcome: out.Outcome, Attempts: out.Attempts, StatusCode: out.StatusCode}, nil
		case contract.WebhookBusy:
			if workflow.GetVersion(ctx, "webhook-slot-signal", workflow.DefaultVersion, 1) == 1 {
				// Wait for the attempt that frees a slot to say so, instead of polling: a burst to
				// one endpoint polling every few seconds floods Temporal with timers and attempts.
				delay, waitSlot = webhookSlotWait, true
				break
			}
			busy = min(max(2*busy, webhookBusyFirst), webhookBusyMax)
			delay = busy
		default:
			busy = 0
			in.Attempt++
		}
		if waitSlot {
			waitFor(ctx, delay, redeliver, slotFree)
		} else {
			waitFor(ctx, delay, redeliver)
		}
		if workflow.GetInfo(ctx).GetCurrentHistoryLength() > webhookHistoryLimit {
			return WebhookDeliveryResult{}, workflow.NewContinueAsNewError(ctx, WebhookDeliveryWorkflow, in)
		}
	}
}

// waitFor waits d, or until a signal comes on one of the channels.
func waitFor(ctx workflow.Context, d time.Duration, chans ...workflow.ReceiveChannel) {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, d), func(workflow.Future) {})
	for _, ch := range chans {
		sel.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	}
	sel.Select(ctx)
}

// webhookStartOptions are a delivery's start options: its business id, and search attributes
// naming the integration, the endpoint and the event type.
func webhookStartOptions(taskQueue string, in WebhookDeliveryInput) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       WebhookDeliveryID(in.DeliveryID),
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Without it the SDK hands back the running one as if it were new.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(SAIntegrationID.ValueSet(in.IntegrationID),
			SAWebhookID.ValueSet(in.WebhookID), SAWebhookEvent.ValueSet(in.Type)),
		StaticSummary: fmt.Sprintf("%s to webhook %s", in.Type, in.WebhookID),
	}
}

// StartWebhookDelivery starts a delivery's workflow; one already running is success.
func StartWebhookDelivery(ctx context.Context, c client.Client, taskQueue string, in WebhookDeliveryInput) error {
	_, err := c.ExecuteWorkflow(ctx, webhookStartOptions(taskQueue, in), WebhookDeliveryWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}

// RedeliverWebhook makes a delivery attempt now: it signals the running workflow, or starts a
// new one when the last has ended (its row must be pending again first).
func RedeliverWebhook(ctx context.Context, c client.Client, taskQueue string, in WebhookDeliveryInput) error {
	opts := webhookStartOptions(taskQueue, in)
	opts.WorkflowExecutionErrorWhenAlreadyStarted = false
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	_, err := c.SignalWithStartWorkflow(ctx, opts.ID, WebhookRedeliverSignal, nil, opts, WebhookDeliveryWorkflow, in)
	return err
}

// Schedule of the webhook re-drive.
const (
	// WebhookRedriveScheduleID runs RedriveWebhooks.
	WebhookRedriveScheduleID = "webhook-redrive"
	// WebhookRedriveEvery is how often undispatched deliveries are re-driven.
	WebhookRedriveEvery = time.Minute
	// webhookRedriveMinAge leaves a fresh row to the writer that starts it after its commit.
	webhookRedriveMinAge = 30 * time.Second
	// webhookRedriveLimit bounds the rows one run starts; the next run takes the rest.
	webhookRedriveLimit = 500
)

// WebhookRedriveInput is empty: the outbox says what to do.
type WebhookRedriveInput = RedriveInput

// WebhookRedriveResult counts the deliveries started, and those found already running.
type WebhookRedriveResult = RedriveResult

// RedriveWebhooks starts the workflow of every pending delivery whose start is not recorded:
// the writer died between its commit and the start, or Temporal was unreachable then. Each
// starts as an abandoned child under the delivery's business id, so one already running is
// found, not duplicated (its first attempt records the start).
func RedriveWebhooks(ctx workflow.Context, _ WebhookRedriveInput) (WebhookRedriveResult, error) {
	in := contract.PendingWebhooksInput{MinAge: webhookRedriveMinAge, Limit: webhookRedriveLimit}
	return redrive(ctx, contract.PendingWebhookDeliveries, in,
		func(r contract.PendingWebhooksResult) []contract.PendingWebhook { return r.Deliveries },
		func(p contract.PendingWebhook) workflow.Future {
			in := WebhookDeliveryInput{DeliveryID: p.DeliveryID, IntegrationID: p.IntegrationID, WebhookID: p.WebhookID, Type: p.Type}
			opts := webhookStartOptions("", in)
			return startAbandoned(ctx, workflow.ChildWorkflowOptions{
				WorkflowID:            opts.ID,
				WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
				TypedSearchAttributes: opts.TypedSearchAttributes,
			}, WebhookDeliveryWorkflow, in)
		}, func(p contract.PendingWebhook) []any { return []any{"delivery", p.DeliveryID} })
}
