package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"entgo.io/ent/dialect/sql"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/webhookdelivery"
	"github.com/splathost/splathost/ent/webhookendpoint"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/workflows/contract"
)

// Attempts make delivery attempts against the deliveries' rows in Ent with Settings (nil:
// deliveries are not configured in this process, and every attempt fails).
type Attempts struct {
	Ent      *ent.Client
	Settings *Settings
	Log      *slog.Logger
}

// webhookWaiting is the delivery log's lastError of a delivery waiting for one of its
// endpoint's slots or its integration's; it also marks the rows a freed slot wakes
// (webhookWaitingBefore too: rows marked before integrations had slots).
const (
	webhookWaiting       = "waiting for a free delivery slot of the endpoint or the integration"
	webhookWaitingBefore = "waiting for a free delivery slot of the endpoint"
)

// The advisory lock spaces of the delivery slots, apart from each other and from the view
// streamer's.
const (
	webhookLockSpace            = "splathost-webhook-slot:"
	webhookIntegrationLockSpace = "splathost-webhook-integration-slot:"
)

// slotKey is the advisory lock key (the two-int form) of a delivery slot of the id in space.
func slotKey(space, id string) int32 {
	h := fnv.New32a()
	h.Write([]byte(space + id))
	return int32(h.Sum32())
}

// Attempt POSTs a delivery to its endpoint once and records the outcome on the
// delivery row (attempts, lastStatusCode, state, nextAttemptAt).
//
// Per-integration and per-endpoint bounds: the attempt first takes one of its integration's
// IntegrationConcurrency slots, then one of the endpoint's Concurrency slots, each a
// transaction-scoped Postgres advisory lock (integration or endpoint hash, slot number) tried
// without waiting; when all are held it answers WebhookBusy at once and the workflow waits for
// a freed slot's signal, so a slow receiver holds at most Concurrency worker slots, an
// integration of many slow receivers at most IntegrationConcurrency, and neither delays another
// integration's deliveries. The locks are held by the transaction that records the outcome and goes with it
// (or with the connection, when a worker dies mid-request), so no slot is ever leaked.
//
// Idempotent: a delivery already closed is answered from its row; a retried attempt may POST
// again, which the receiver deduplicates by webhook-id (at-least-once delivery).
func (a *Attempts) Attempt(ctx context.Context, in contract.AttemptWebhookInput) (contract.AttemptWebhookResult, error) {
	if in.DeliveryID == "" {
		return contract.AttemptWebhookResult{}, invalid("AttemptWebhookDelivery: delivery id is required")
	}
	if a.Settings == nil {
		return contract.AttemptWebhookResult{}, errors.New("webhook deliveries are not configured on this worker")
	}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return contract.AttemptWebhookResult{}, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	// One attempt per delivery at a time: the direct attempt of the writer and a workflow's (the
	// re-drive's, after a hand-off) may meet here; the second finds the row locked and stands
	// back instead of POSTing the same event twice at once.
	d, err := tx.WebhookDelivery.Query().Where(webhookdelivery.ID(in.DeliveryID)).
		ForUpdate(sql.WithLockAction(sql.SkipLocked)).Only(ctx)
	if ent.IsNotFound(err) {
		_ = tx.Rollback()
		switch exists, err := a.Ent.WebhookDelivery.Query().Where(webhookdelivery.ID(in.DeliveryID)).Exist(ctx); {
		case err != nil:
			return contract.AttemptWebhookResult{}, err
		case !exists:
			return contract.AttemptWebhookResult{Outcome: contract.WebhookGone}, nil
		}
		return a.standBack(ctx, in)
	}
	if err != nil {
		return contract.AttemptWebhookResult{}, err
	}
	if d.State != webhookdelivery.StatePending {
		return contract.AttemptWebhookResult{Outcome: closedOutcome(d.State), StatusCode: deref(d.LastStatusCode), Attempts: d.Attempts}, nil
	}
	ep, err := tx.WebhookEndpoint.Query().Where(webhookendpoint.ID(d.EndpointID)).Only(ctx)
	if ent.IsNotFound(err) || (err == nil && ep.DeletedAt != nil) {
		err := tx.WebhookDelivery.UpdateOneID(d.ID).SetState(webhookdelivery.StateFailed).
			SetLastError("endpoint deleted").ClearNextAttemptAt().Exec(ctx)
		if err == nil {
			err = tx.Commit()
		}
		return contract.AttemptWebhookResult{Outcome: contract.WebhookGone, Attempts: d.Attempts}, err
	}
	if err != nil {
		return contract.AttemptWebhookResult{}, err
	}
	secrets, err := a.webhookSecrets(ep, time.Now())
	if err != nil {
		return contract.AttemptWebhookResult{}, err
	}
	held, err := takeSlot(ctx, tx, slotKey(webhookIntegrationLockSpace, d.IntegrationID), max(a.Settings.IntegrationConcurrency, 1))
	if err == nil && held {
		held, err = takeSlot(ctx, tx, slotKey(webhookLockSpace, ep.ID), max(a.Settings.Concurrency, 1))
	}
	if err != nil {
		return contract.AttemptWebhookResult{}, err
	}
	if !held {
		_ = tx.Rollback()
		if in.Direct {
			return contract.AttemptWebhookResult{Outcome: contract.WebhookBusy, Attempts: d.Attempts}, nil
		}
		return contract.AttemptWebhookResult{Outcome: contract.WebhookBusy, Attempts: d.Attempts}, a.markWaiting(ctx, d.ID)
	}
	status, postErr := a.postWebhook(ctx, ep.URL, d, secrets)
	now := time.Now()
	up := tx.WebhookDelivery.UpdateOneID(d.ID).AddAttempts(1)
	switch {
	case d.DispatchedAt != nil:
	case in.Direct:
		// Left for the hand-off's start to record (or, if this process dies first, for the
		// re-drive to find).
	default:
		up.SetDispatchedAt(now)
	}
	if status != 0 {
		up.SetLastStatusCode(status)
	} else {
		up.ClearLastStatusCode()
	}
	out := contract.AttemptWebhookResult{StatusCode: status, Attempts: d.Attempts + 1}
	switch {
	case postErr == nil && status >= 200 && status < 300:
		up.SetState(webhookdelivery.StateSucceeded).SetDeliveredAt(now).ClearNextAttemptAt().ClearLastError()
		out.Outcome = contract.WebhookDelivered
	default:
		msg := "receiver answered " + strconv.Itoa(status)
		if postErr != nil {
			msg = postErr.Error()
		}
		up.SetLastError(trimError(msg))
		if in.Final {
			up.SetState(webhookdelivery.StateFailed).ClearNextAttemptAt()
			out.Outcome = contract.WebhookFailed
		} else {
			up.SetNextAttemptAt(now.Add(in.RetryIn))
			out.Outcome = contract.WebhookRetry
		}
	}
	if err := up.Exec(ctx); err != nil {
		return contract.AttemptWebhookResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return contract.AttemptWebhookResult{}, err
	}
	// The slots are free again: wake the longest-waiting deliveries rather than let them find
	// out at their next poll. A failure here costs only that wait.
	a.wakeWaiting(ctx, d.IntegrationID, ep.ID)
	return out, nil
}

// closedOutcome is the outcome of an attempt at a delivery already closed in state.
func closedOutcome(state webhookdelivery.State) string {
	if state == webhookdelivery.StateSucceeded {
		return contract.WebhookDelivered
	}
	return contract.WebhookFailed
}

// standBack answers an attempt that found another attempt at the same delivery in flight. A
// direct attempt leaves the delivery to it (WebhookInFlight); a workflow's waits as for a busy
// slot, marked so that the other attempt's end wakes it, and then finds the row closed or
// tries again.
func (a *Attempts) standBack(ctx context.Context, in contract.AttemptWebhookInput) (contract.AttemptWebhookResult, error) {
	if in.Direct {
		return contract.AttemptWebhookResult{Outcome: contract.WebhookInFlight}, nil
	}
	return contract.AttemptWebhookResult{Outcome: contract.WebhookBusy}, a.markWaiting(ctx, in.DeliveryID)
}

// markWaiting marks a pending delivery as waiting for its endpoint, so that the attempt that
// frees a slot wakes its workflow (wakeWaiting).
func (a *Attempts) markWaiting(ctx context.Context, deliveryID string) error {
	return a.Ent.WebhookDelivery.Update().Where(webhookdelivery.ID(deliveryID), webhookdelivery.StateEQ(webhookdelivery.StatePending)).
		SetLastError(webhookWaiting).Exec(ctx)
}

// wakeWaiting signals the oldest delivery of the endpoint marked as waiting for a slot, and the
// oldest of its integration's other endpoints (one may have waited for the integration's slot
// this attempt freed).
func (a *Attempts) wakeWaiting(ctx context.Context, integrationID, endpointID string) {
	if a.Settings.Wake == nil {
		return
	}
	waiting := a.Ent.WebhookDelivery.Query().Where(webhookdelivery.StateEQ(webhookdelivery.StatePending),
		webhookdelivery.LastErrorIn(webhookWaiting, webhookWaitingBefore)).Order(ent.Asc(webhookdelivery.FieldCreatedAt)).Limit(1)
	ids, err := waiting.Clone().Where(webhookdelivery.EndpointID(endpointID)).IDs(ctx)
	if err == nil {
		var other []string
		other, err = waiting.Where(webhookdelivery.IntegrationID(integrationID), webhookdelivery.EndpointIDNEQ(endpointID)).IDs(ctx)
		ids = append(ids, other...)
	}
	for _, id := range ids {
		if err == nil {
			err = a.Settings.Wake(ctx, id)
		}
	}
	if err != nil {
		a.Log.Warn("webhook: waking a waiting delivery", "endpoint", endpointID, "error", err)
	}
}

// takeSlot tries the slots of the lock key in turn, in one statement, and reports whether tx
// now holds one. The filter runs row by row under the LIMIT, so it stops at the first lock
// taken and holds no other.
func takeSlot(ctx context.Context, tx *ent.Tx, key int32, slots int) (bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT s FROM generate_series(0, $2::int4 - 1) AS s
		WHERE pg_try_advisory_xact_lock($1::int4, s) LIMIT 1`, key, slots)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	held := rows.Next()
	return held, rows.Err()
}

// webhookSecrets are the secrets that sign now: the current one, and the previous one during a
// rotation's overlap.
func (a *Attempts) webhookSecrets(ep *ent.WebhookEndpoint, now time.Time) ([]string, error) {
	cur, err := a.Settings.Sealer.Open(ep.ID, ep.SecretSealed)
	if err != nil {
		return nil, invalid("endpoint %s: %v", ep.ID, err)
	}
	out := []string{cur}
	if ep.PreviousSecretSealed != nil && ep.PreviousExpiresAt != nil && now.Before(*ep.PreviousExpiresAt) {
		prev, err := a.Settings.Sealer.Open(ep.ID, *ep.PreviousSecretSealed)
		if err != nil {
			return nil, invalid("endpoint %s: %v", ep.ID, err)
		}
		out = append(out, prev)
	}
	return out, nil
}

// postWebhook sends the delivery's body, signed, and returns the receiver's status (0 with an
// error when no answer came in time). The answer's body is read (bounded) and dropped.
func (a *Attempts) postWebhook(ctx context.Context, url string, d *ent.WebhookDelivery, secrets []string) (int, error) {
	body := []byte(d.Payload)
	ts := time.Now().Unix()
	sig, err := events.Sign(secrets, d.ID, ts, body)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, contract.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("bad endpoint URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "splathost-webhooks/1")
	req.Header.Set(events.HeaderID, d.ID)
	req.Header.Set(events.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(events.HeaderSignature, sig)
	resp, err := a.Settings.Client.Do(req)
	if err != nil {
		if errors.Is(err, events.ErrPrivateTarget) {
			return 0, events.ErrPrivateTarget
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("no answer within %s", contract.WebhookTimeout)
		}
		// The transport's message names the URL, never a header: no secret leaves here.
		return 0, fmt.Errorf("request failed: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// maxError is the last_error column's bound: ent's MaxLen counts bytes.
const maxError = 500

// trimError bounds msg to the column, cut on a rune boundary.
func trimError(msg string) string {
	if len(msg) <= maxError {
		return msg
	}
	return strings.ToValidUTF8(msg[:maxError-len("…")], "") + "…"
}
