package contract

import (
	"time"
)

// Outcomes of a delivery attempt.
const (
	// WebhookDelivered: the receiver answered 2xx (or an earlier attempt already had).
	WebhookDelivered = "delivered"
	// WebhookRetry: the attempt failed; the row says when the next one is due.
	WebhookRetry = "retry"
	// WebhookFailed: the last attempt failed; the row is closed as failed.
	WebhookFailed = "failed"
	// WebhookGone: the delivery or its endpoint no longer exists; nothing more to do.
	WebhookGone = "gone"
	// WebhookBusy: every delivery slot of the endpoint is taken; no attempt was made.
	WebhookBusy = "busy"
	// WebhookInFlight: another attempt at the same delivery is running; a direct attempt
	// leaves the delivery to it.
	WebhookInFlight = "in-flight"
)

// AttemptWebhookInput is one attempt at a delivery. RetryIn is when the workflow will try again
// if this attempt fails (recorded as nextAttemptAt); Final says there will be no next attempt.
//
// Direct marks the first attempt made by the process that wrote the event, right after its
// commit and outside any workflow (events.Dispatcher): it leaves the row undispatched, so that
// the re-drive still starts a workflow if the process dies before handing a failed delivery on,
// and a busy endpoint marks nothing (no workflow waits to be woken).
type AttemptWebhookInput struct {
	DeliveryID string
	RetryIn    time.Duration
	Final      bool
	Direct     bool
}

// AttemptWebhookResult is the attempt's outcome and the receiver's status (0 when none came).
type AttemptWebhookResult struct {
	Outcome    string
	StatusCode int
	Attempts   int
}

// PendingWebhooksInput bounds the re-drive's scan: rows older than MinAge, at most Limit.
type PendingWebhooksInput struct {
	MinAge time.Duration
	Limit  int
}

// PendingWebhook is one delivery whose workflow is not known to have started.
type PendingWebhook struct {
	DeliveryID    string
	IntegrationID string
	WebhookID     string
	Type          string
}

// PendingWebhooksResult lists the deliveries to re-drive.
type PendingWebhooksResult struct {
	Deliveries []PendingWebhook
}

// WebhookTimeout bounds one delivery attempt: connect, send and the receiver's answer (contract: a
// 2xx within 10 s delivers). The delivery client enforces it and the workflow sizes the
// attempt's activity timeout from it.
const WebhookTimeout = 10 * time.Second
