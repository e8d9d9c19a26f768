package customers

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/webhookdelivery"
	"github.com/splathost/splathost/ent/webhookendpoint"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ids"
)

// NewWebhook is a validated endpoint to register: its id (chosen first, as the sealed secret
// is bound to it), URL, event filter (nil for every type), description and sealed secret.
type NewWebhook struct {
	ID, URL      string
	Events       []string
	Description  string
	SecretSealed []byte
}

// CreateWebhook registers w for the integration unless it has max live endpoints already (409),
// and records the 201 answer rendered by answer with it. The integration row's lock
// serializes creates, so the bound holds under concurrency.
func (s *Store) CreateWebhook(ctx context.Context, integrationID string, max int, w NewWebhook,
	answer func(*ent.WebhookEndpoint) any) (*idempotency.Recorded, error) {
	var out *idempotency.Recorded
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM integrations WHERE id = $1 FOR UPDATE`, integrationID); err != nil {
			return err
		}
		n, err := tx.WebhookEndpoint.Query().Where(webhookendpoint.IntegrationID(integrationID),
			webhookendpoint.DeletedAtIsNil()).Count(ctx)
		if err != nil {
			return err
		}
		if n >= max {
			return apperr.Conflict("at most " + strconv.Itoa(max) + " webhooks per integration: delete one first")
		}
		e, err := tx.WebhookEndpoint.Create().SetID(w.ID).SetIntegrationID(integrationID).SetURL(w.URL).
			SetEvents(w.Events).SetDescription(w.Description).SetSecretSealed(w.SecretSealed).Save(ctx)
		if err != nil {
			return err
		}
		out, err = idempotency.Record(ctx, tx, http.StatusCreated, answer(e))
		return err
	})
	return out, err
}

// DeliveryPage is one page of an endpoint's delivery log, newest first: at most Limit rows,
// after the row (AfterAt, AfterID) when After is set.
type DeliveryPage struct {
	Limit   int
	After   bool
	AfterAt time.Time
	AfterID string
}

// Deliveries reads a page of the delivery log of endpoint endpointID; more says a next page
// exists. Creation times are truncated to the microseconds Postgres stores, so a cursor made
// from a row names it exactly.
func (s *Store) Deliveries(ctx context.Context, endpointID string, p DeliveryPage) (rows []*ent.WebhookDelivery, more bool, err error) {
	q := s.DB.Ent.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(endpointID))
	if p.After {
		q.Where(webhookdelivery.Or(webhookdelivery.CreatedAtLT(p.AfterAt),
			webhookdelivery.And(webhookdelivery.CreatedAt(p.AfterAt), webhookdelivery.IDLT(p.AfterID))))
	}
	rows, err = q.Order(ent.Desc(webhookdelivery.FieldCreatedAt), ent.Desc(webhookdelivery.FieldID)).Limit(p.Limit+1).
		Select(webhookdelivery.FieldID, webhookdelivery.FieldType, webhookdelivery.FieldState, webhookdelivery.FieldAttempts,
			webhookdelivery.FieldLastStatusCode, webhookdelivery.FieldLastError, webhookdelivery.FieldNextAttemptAt,
			webhookdelivery.FieldCreatedAt).All(ctx)
	if err != nil {
		return nil, false, apperr.Internal(err)
	}
	if more = len(rows) > p.Limit; more {
		rows = rows[:p.Limit]
	}
	for _, d := range rows {
		d.CreatedAt = d.CreatedAt.Truncate(time.Microsecond)
	}
	return rows, more, nil
}

// ErrWebhookNotFound answers for an endpoint that is not the caller's live one: malformed,
// another integration's and deleted ids are the same 404.
var ErrWebhookNotFound = apperr.NotFound("webhook not found")

// ErrDeliveryNotFound answers for a delivery that is not of the endpoint named in the path.
var ErrDeliveryNotFound = apperr.NotFound("delivery not found")

// Webhook loads the live endpoint id of the integration (ErrWebhookNotFound otherwise).
func (s *Store) Webhook(ctx context.Context, integrationID, id string) (*ent.WebhookEndpoint, error) {
	if !ids.Valid(id) {
		return nil, ErrWebhookNotFound
	}
	e, err := s.DB.Ent.WebhookEndpoint.Query().Where(webhookendpoint.ID(strings.ToLower(id)),
		webhookendpoint.IntegrationID(integrationID), webhookendpoint.DeletedAtIsNil()).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, ErrWebhookNotFound
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return e, nil
}

// Webhooks lists the integration's live endpoints, oldest first.
func (s *Store) Webhooks(ctx context.Context, integrationID string) ([]*ent.WebhookEndpoint, error) {
	rows, err := s.DB.Ent.WebhookEndpoint.Query().Where(webhookendpoint.IntegrationID(integrationID),
		webhookendpoint.DeletedAtIsNil()).Order(ent.Asc(webhookendpoint.FieldCreatedAt), ent.Asc(webhookendpoint.FieldID)).
		All(ctx)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return rows, nil
}

// DeleteWebhook marks the live endpoint id deleted: pending deliveries end at their next attempt.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	n, err := s.DB.Ent.WebhookEndpoint.Update().Where(webhookendpoint.ID(id), webhookendpoint.DeletedAtIsNil()).
		SetDeletedAt(time.Now()).Save(ctx)
	if err != nil {
		return apperr.Internal(err)
	}
	if n == 0 {
		return ErrWebhookNotFound
	}
	return nil
}

// RotateWebhook makes sealed the endpoint's secret under its row lock; the secret it replaces
// keeps signing until overlap has passed (a second rotation within it drops the oldest).
func (s *Store) RotateWebhook(ctx context.Context, id string, sealed []byte, overlap time.Duration) (*ent.WebhookEndpoint, error) {
	var out *ent.WebhookEndpoint
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		cur, err := tx.WebhookEndpoint.Query().Where(webhookendpoint.ID(id), webhookendpoint.DeletedAtIsNil()).ForUpdate().Only(ctx)
		if ent.IsNotFound(err) {
			return ErrWebhookNotFound
		}
		if err != nil {
			return err
		}
		out, err = cur.Update().SetSecretSealed(sealed).SetPreviousSecretSealed(cur.SecretSealed).
			SetPreviousExpiresAt(time.Now().Add(overlap)).Save(ctx)
		return err
	})
	return out, err
}

// ResetDelivery makes delivery deliveryID of endpoint endpointID pending again, due now, and
// returns it (ErrDeliveryNotFound for any other id). The caller then starts or signals its
// workflow; should that fail, the re-drive starts the pending row.
func (s *Store) ResetDelivery(ctx context.Context, endpointID, deliveryID string) (*ent.WebhookDelivery, error) {
	if !ids.Valid(deliveryID) {
		return nil, ErrDeliveryNotFound
	}
	d, err := s.DB.Ent.WebhookDelivery.Query().Where(webhookdelivery.ID(strings.ToLower(deliveryID)),
		webhookdelivery.EndpointID(endpointID)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, ErrDeliveryNotFound
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if err := s.DB.Ent.WebhookDelivery.UpdateOneID(d.ID).SetState(webhookdelivery.StatePending).ClearDispatchedAt().
		SetNextAttemptAt(time.Now()).Exec(ctx); err != nil {
		return nil, apperr.Internal(err)
	}
	return d, nil
}
