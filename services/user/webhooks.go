package user

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/routes"
	"github.com/splathost/splathost/internal/webhooks"
	splathost "github.com/splathost/splathost/sdk/go"
	"github.com/splathost/splathost/workflows"
)

// webhooksPath is the endpoint registry (contract item 12), managed with the integration's
// secret + public key.
const webhooksPath = routes.Webhooks

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

// UseWebhooks wires the registry and starts the workflows of the events this service writes.
// Without it the registry answers 503 and the events still wait in the outbox for the re-drive.
func (s *Service) UseWebhooks(w webhooks.Registry) {
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
	return s.store().Webhook(c.UserContext(), caller.IntegrationID, c.Params("webhookId"))
}

func (s *Service) createWebhook(c *fiber.Ctx) error {
	caller, err := s.webhookCaller(c)
	if err != nil {
		return err
	}
	w, secret, err := s.parseNewWebhook(c.Body())
	if err != nil {
		return err
	}
	answer, err := s.store().CreateWebhook(c.UserContext(), caller.IntegrationID, maxWebhooks, *w, func(e *ent.WebhookEndpoint) any {
		return fiber.Map{"status": "success", "webhook": renderWebhook(e, secret)}
	})
	if err != nil {
		return err
	}
	return httpx.SendRecorded(c, answer)
}

func (s *Service) listWebhooks(c *fiber.Ctx) error {
	caller, err := s.webhookCaller(c)
	if err != nil {
		return err
	}
	rows, err := s.store().Webhooks(c.UserContext(), caller.IntegrationID)
	if err != nil {
		return err
	}
	out := make([]splathost.Webhook, len(rows))
	for i, e := range rows {
		out[i] = renderWebhook(e, "")
	}
	return c.JSON(fiber.Map{"status": "success", "webhooks": out})
}

// deleteWebhook stops every delivery to the endpoint: pending ones end at their next attempt.
func (s *Service) deleteWebhook(c *fiber.Ctx) error {
	e, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	if err := s.store().DeleteWebhook(c.UserContext(), e.ID); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success"})
}

// rotateWebhook issues a new secret; the one it replaces keeps signing for 24 h beside it.
func (s *Service) rotateWebhook(c *fiber.Ctx) error {
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
	if e, err = s.store().RotateWebhook(c.UserContext(), e.ID, sealed, webhookOverlap); err != nil {
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
	e, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	page, err := parseDeliveryPage(c)
	if err != nil {
		return err
	}
	rows, more, err := s.store().Deliveries(c.UserContext(), e.ID, page)
	if err != nil {
		return err
	}
	var next any
	if more {
		next = deliveryCursor(rows[len(rows)-1])
	}
	return c.JSON(fiber.Map{"status": "success", "deliveries": deliveryViews(rows), "nextCursor": next})
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
	d, err := s.store().ResetDelivery(ctx, e.ID, c.Params("deliveryId"))
	if err != nil {
		return err
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
