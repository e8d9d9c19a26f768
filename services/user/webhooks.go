package user

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/webhookdelivery"
	"github.com/splathost/splathost/ent/webhookendpoint"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ids"
	splathost "github.com/splathost/splathost/sdk/go"
	"github.com/splathost/splathost/workflows"
)

// webhooksPath is the endpoint registry (contract item 12), managed with the integration's
// secret + public key.
const webhooksPath = "/api/v1/webhooks"

// Bounds of the registry.
const (
	maxWebhooks           = 20
	maxWebhookDescription = 500
	// webhookOverlap is how long the previous secret keeps signing after a rotation.
	webhookOverlap    = 24 * time.Hour
	defaultDeliveries = 20
	maxDeliveries     = 100
	maxDeliveryCursor = 128
)

// Webhooks are the registry's settings: the sealer of signing secrets, whether endpoints may
// target private addresses (make dev, tests), and the starter of delivery workflows.
type Webhooks struct {
	Sealer       *events.Sealer
	AllowPrivate bool
	Starter      events.Starter
}

// UseWebhooks wires the registry and starts the workflows of the events this service writes.
// Without it the registry answers 503 and the events still wait in the outbox for the re-drive.
func (s *Service) UseWebhooks(w Webhooks) {
	s.webhooks = w
	s.events.Starter = w.Starter
}

func (s *Service) registerWebhooks(r fiber.Router) {
	r.Post(webhooksPath, s.createWebhook)
	r.Get(webhooksPath, s.listWebhooks)
	r.Delete(webhooksPath+"/:webhookId", s.deleteWebhook)
	r.Post(webhooksPath+"/:webhookId/rotate", s.rotateWebhook)
	r.Get(webhooksPath+"/:webhookId/deliveries", s.listDeliveries)
	r.Post(webhooksPath+"/:webhookId/deliveries/:deliveryId/redeliver", s.redeliver)
}

// renderWebhook renders an endpoint as the API shows it, as the Go SDK's Webhook its clients
// decode (held to openapi.yaml by api/sdk_types_test.go); secret only on create and rotate.
func renderWebhook(e *ent.WebhookEndpoint, secret string) splathost.Webhook {
	evs := e.Events
	if len(evs) == 0 {
		evs = events.Types
	}
	return splathost.Webhook{ID: e.ID, URL: e.URL, Events: evs, Description: e.Description, Secret: secret,
		CreatedAt: httpx.ISOTime(e.CreatedAt)}
}

func errWebhookNotFound() error { return apperr.NotFound("webhook not found") }

// webhookCaller is the integration-level caller of the registry (secret + public key; an EU
// header is ignored), and the registry must be wired.
func (s *Service) webhookCaller(c *fiber.Ctx) (*httpx.Caller, error) {
	caller := httpx.CallerOf(c)
	if caller == nil || caller.Scheme != httpx.SchemeKey {
		return nil, apperr.Unauthorized("missing or invalid credentials")
	}
	if s.webhooks.Sealer == nil {
		return nil, apperr.New(fiber.StatusServiceUnavailable, "webhooks are not configured on this deployment")
	}
	return caller, nil
}

// pathWebhook is the caller's endpoint named by the path's id (404 for anyone else's).
func (s *Service) pathWebhook(c *fiber.Ctx) (*ent.WebhookEndpoint, error) {
	caller, err := s.webhookCaller(c)
	if err != nil {
		return nil, err
	}
	return s.ownWebhook(c.UserContext(), caller, c.Params("webhookId"))
}

// ownWebhook loads a live endpoint of the caller's integration; anything else (malformed id,
// another integration's, deleted) is the same 404.
func (s *Service) ownWebhook(ctx context.Context, caller *httpx.Caller, id string) (*ent.WebhookEndpoint, error) {
	if !ids.Valid(id) {
		return nil, errWebhookNotFound()
	}
	e, err := s.db.Ent.WebhookEndpoint.Query().Where(webhookendpoint.ID(strings.ToLower(id)),
		webhookendpoint.IntegrationID(caller.IntegrationID), webhookendpoint.DeletedAtIsNil()).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, errWebhookNotFound()
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return e, nil
}

func (s *Service) createWebhook(c *fiber.Ctx) error {
	caller, err := s.webhookCaller(c)
	if err != nil {
		return err
	}
	f, err := httpx.DecodeObject(c.Body(), false)
	if err != nil {
		return err
	}
	f.Only("url", "events", "description")
	f.Require("url")
	f.NotNull("events")
	f.NotNull("description")
	rawURL, _ := f.String("url", 1, events.MaxURL)
	if rawURL != "" {
		if problem := events.URLProblem(rawURL, s.webhooks.AllowPrivate); problem != "" {
			f.Issuef("url: %s", problem)
		}
	}
	var types []string
	if f.Has("events") {
		if types, _ = f.StringList("events", len(events.Types), func(t string) bool { return slices.Contains(events.Types, t) },
			"must be one of "+strings.Join(events.Types, ", ")); types != nil && len(types) == 0 {
			f.Issuef("events: at least one event type (omit the field for every type)")
		}
	}
	desc, _ := f.String("description", 0, maxWebhookDescription)
	if err := f.Err(); err != nil {
		return err
	}
	secret, err := events.NewSecret()
	if err != nil {
		return apperr.Internal(err)
	}
	id := ids.New()
	sealed, err := s.webhooks.Sealer.Seal(id, secret)
	if err != nil {
		return apperr.Internal(err)
	}
	ctx := c.UserContext()
	var e *ent.WebhookEndpoint
	var answer *idempotency.Recorded
	err = s.db.InTx(ctx, func(tx *ent.Tx) error {
		// The integration row's lock serializes creates, so the bound holds under concurrency.
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM integrations WHERE id = $1 FOR UPDATE`, caller.IntegrationID); err != nil {
			return err
		}
		n, err := tx.WebhookEndpoint.Query().Where(webhookendpoint.IntegrationID(caller.IntegrationID),
			webhookendpoint.DeletedAtIsNil()).Count(ctx)
		if err != nil {
			return err
		}
		if n >= maxWebhooks {
			return apperr.Conflict("at most " + strconv.Itoa(maxWebhooks) + " webhooks per integration: delete one first")
		}
		e, err = tx.WebhookEndpoint.Create().SetID(id).SetIntegrationID(caller.IntegrationID).SetURL(rawURL).
			SetEvents(types).SetDescription(desc).SetSecretSealed(sealed).Save(ctx)
		if err != nil {
			return err
		}
		answer, err = idempotency.Record(ctx, tx, fiber.StatusCreated, fiber.Map{"status": "success", "webhook": renderWebhook(e, secret)})
		return err
	})
	if err != nil {
		return err
	}
	return answer.Send(c)
}

func (s *Service) listWebhooks(c *fiber.Ctx) error {
	caller, err := s.webhookCaller(c)
	if err != nil {
		return err
	}
	rows, err := s.db.Ent.WebhookEndpoint.Query().Where(webhookendpoint.IntegrationID(caller.IntegrationID),
		webhookendpoint.DeletedAtIsNil()).Order(ent.Asc(webhookendpoint.FieldCreatedAt), ent.Asc(webhookendpoint.FieldID)).
		All(c.UserContext())
	if err != nil {
		return apperr.Internal(err)
	}
	out := make([]splathost.Webhook, len(rows))
	for i, e := range rows {
		out[i] = renderWebhook(e, "")
	}
	return c.JSON(fiber.Map{"status": "success", "webhooks": out})
}

// deleteWebhook stops every delivery to the endpoint: pending ones end at their next attempt.
func (s *Service) deleteWebhook(c *fiber.Ctx) error {
	ctx := c.UserContext()
	e, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	n, err := s.db.Ent.WebhookEndpoint.Update().Where(webhookendpoint.ID(e.ID), webhookendpoint.DeletedAtIsNil()).
		SetDeletedAt(time.Now()).Save(ctx)
	if err != nil {
		return apperr.Internal(err)
	}
	if n == 0 {
		return errWebhookNotFound()
	}
	return c.JSON(fiber.Map{"status": "success"})
}

// rotateWebhook issues a new secret; the one it replaces keeps signing for 24 h beside it (a
// second rotation within them drops the oldest).
func (s *Service) rotateWebhook(c *fiber.Ctx) error {
	ctx := c.UserContext()
	e, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	secret, err := events.NewSecret()
	if err != nil {
		return apperr.Internal(err)
	}
	sealed, err := s.webhooks.Sealer.Seal(e.ID, secret)
	if err != nil {
		return apperr.Internal(err)
	}
	err = s.db.InTx(ctx, func(tx *ent.Tx) error {
		cur, err := tx.WebhookEndpoint.Query().Where(webhookendpoint.ID(e.ID), webhookendpoint.DeletedAtIsNil()).ForUpdate().Only(ctx)
		if ent.IsNotFound(err) {
			return errWebhookNotFound()
		}
		if err != nil {
			return err
		}
		e, err = cur.Update().SetSecretSealed(sealed).SetPreviousSecretSealed(cur.SecretSealed).
			SetPreviousExpiresAt(time.Now().Add(webhookOverlap)).Save(ctx)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "webhook": renderWebhook(e, secret)})
}

// deliveryCursor is the position after a page's last row: its creation time (µs) and id.
func deliveryCursor(d *ent.WebhookDelivery) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(d.CreatedAt.UnixMicro(), 10) + "." + d.ID))
}

func parseDeliveryCursor(s string) (time.Time, string, bool) {
	if len(s) > maxDeliveryCursor {
		return time.Time{}, "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, "", false
	}
	us, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || !ids.Valid(id) {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n), id, true
}

// listDeliveries pages an endpoint's delivery log, newest first.
func (s *Service) listDeliveries(c *fiber.Ctx) error {
	ctx := c.UserContext()
	e, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	limit := defaultDeliveries
	var issues []string
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDeliveries {
			issues = append(issues, "limit: must be an integer from 1 to 100")
		} else {
			limit = n
		}
	}
	q := s.db.Ent.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(e.ID))
	if v := c.Query("cursor"); v != "" {
		at, id, ok := parseDeliveryCursor(v)
		if !ok {
			issues = append(issues, "cursor: invalid cursor; pass nextCursor from a previous page unchanged")
		} else {
			q.Where(webhookdelivery.Or(webhookdelivery.CreatedAtLT(at),
				webhookdelivery.And(webhookdelivery.CreatedAt(at), webhookdelivery.IDLT(id))))
		}
	}
	if len(issues) > 0 {
		return apperr.Invalid("invalid query parameters", issues...)
	}
	rows, err := q.Order(ent.Desc(webhookdelivery.FieldCreatedAt), ent.Desc(webhookdelivery.FieldID)).Limit(limit+1).
		Select(webhookdelivery.FieldID, webhookdelivery.FieldType, webhookdelivery.FieldState, webhookdelivery.FieldAttempts,
			webhookdelivery.FieldLastStatusCode, webhookdelivery.FieldLastError, webhookdelivery.FieldNextAttemptAt,
			webhookdelivery.FieldCreatedAt).All(ctx)
	if err != nil {
		return apperr.Internal(err)
	}
	var next any
	if len(rows) > limit {
		rows = rows[:limit]
		next = deliveryCursor(rows[limit-1])
	}
	out := make([]splathost.WebhookDelivery, len(rows)) // the SDK's, as its clients decode it
	for i, d := range rows {
		// Microseconds: the cursor must name the row's stored time exactly.
		d.CreatedAt = d.CreatedAt.Truncate(time.Microsecond)
		out[i] = splathost.WebhookDelivery{ID: d.ID, Type: d.Type, State: string(d.State), Attempts: d.Attempts,
			LastStatusCode: d.LastStatusCode, LastError: d.LastError, NextAttemptAt: httpx.ISOTimePtr(d.NextAttemptAt),
			CreatedAt: httpx.ISOTime(d.CreatedAt)}
	}
	return c.JSON(fiber.Map{"status": "success", "deliveries": out, "nextCursor": next})
}

// redeliver makes a delivery pending again and attempts it now: the running workflow is
// signalled, or a new one started. The row is reset first, so a start that fails is left to the
// re-drive rather than lost.
func (s *Service) redeliver(c *fiber.Ctx) error {
	ctx := c.UserContext()
	e, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	did := c.Params("deliveryId")
	if !ids.Valid(did) {
		return apperr.NotFound("delivery not found")
	}
	did = strings.ToLower(did)
	d, err := s.db.Ent.WebhookDelivery.Query().Where(webhookdelivery.ID(did), webhookdelivery.EndpointID(e.ID)).Only(ctx)
	if ent.IsNotFound(err) {
		return apperr.NotFound("delivery not found")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	if err := s.db.Ent.WebhookDelivery.UpdateOneID(d.ID).SetState(webhookdelivery.StatePending).ClearDispatchedAt().
		SetNextAttemptAt(time.Now()).Exec(ctx); err != nil {
		return apperr.Internal(err)
	}
	if s.temporal.Client != nil {
		in := workflows.WebhookDeliveryInput{DeliveryID: d.ID, IntegrationID: d.IntegrationID, WebhookID: e.ID, Type: d.Type}
		// The start is not recorded here: the next attempt records it, and until then the
		// re-drive starts the row again should this signal reach a run that was ending.
		if err := workflows.RedeliverWebhook(ctx, s.temporal.Client, s.temporal.TaskQueue, in); err != nil {
			s.log.Warn("redelivering a webhook; the re-drive will start it", "delivery", d.ID, "error", err)
		}
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"status": "accepted", "deliveryId": d.ID})
}
