package user

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/customers"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
	splathost "github.com/splathost/splathost/sdk/go"
)

// The parsing and rendering of the webhook registry's create and delivery-log routes
// (webhooks.go); the rows are internal/customers'.

// parseNewWebhook validates a create body and issues the endpoint's id and signing secret,
// sealed for storage; the secret itself is shown once, in the answer.
func (s *Service) parseNewWebhook(body []byte) (*customers.NewWebhook, string, error) {
	f, err := httpx.DecodeObject(body, false)
	if err != nil {
		return nil, "", err
	}
	f.Only("url", "events", "description")
	f.Require("url")
	f.NotNull("events")
	f.NotNull("description")
	w := &customers.NewWebhook{ID: ids.New()}
	w.URL, _ = f.String("url", 1, events.MaxURL)
	if w.URL != "" {
		if problem := events.URLProblem(w.URL, s.webhooks.AllowPrivate); problem != "" {
			f.Issuef("url: %s", problem)
		}
	}
	if f.Has("events") {
		if w.Events, _ = f.StringList("events", len(events.Types), func(t string) bool { return slices.Contains(events.Types, t) },
			"must be one of "+strings.Join(events.Types, ", ")); w.Events != nil && len(w.Events) == 0 {
			f.Issuef("events: at least one event type (omit the field for every type)")
		}
	}
	w.Description, _ = f.String("description", 0, maxWebhookDescription)
	if err := f.Err(); err != nil {
		return nil, "", err
	}
	secret, err := events.NewSecret()
	if err != nil {
		return nil, "", apperr.Internal(err)
	}
	if w.SecretSealed, err = s.webhooks.Sealer.Seal(w.ID, secret); err != nil {
		return nil, "", apperr.Internal(err)
	}
	return w, secret, nil
}

// parseDeliveryPage reads the delivery log's limit and cursor query parameters, naming every
// problem.
func parseDeliveryPage(c *fiber.Ctx) (customers.DeliveryPage, error) {
	page := customers.DeliveryPage{Limit: defaultDeliveries}
	var issues []string
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDeliveries {
			issues = append(issues, "limit: must be an integer from 1 to 100")
		} else {
			page.Limit = n
		}
	}
	if v := c.Query("cursor"); v != "" {
		page.After = true
		var ok bool
		if page.AfterAt, page.AfterID, ok = parseDeliveryCursor(v); !ok {
			issues = append(issues, "cursor: invalid cursor; pass nextCursor from a previous page unchanged")
		}
	}
	if len(issues) > 0 {
		return page, apperr.Invalid("invalid query parameters", issues...)
	}
	return page, nil
}

// deliveryViews renders delivery rows as the Go SDK's WebhookDelivery, as its clients decode it.
func deliveryViews(rows []*ent.WebhookDelivery) []splathost.WebhookDelivery {
	out := make([]splathost.WebhookDelivery, len(rows))
	for i, d := range rows {
		out[i] = splathost.WebhookDelivery{ID: d.ID, Type: d.Type, State: string(d.State), Attempts: d.Attempts,
			LastStatusCode: d.LastStatusCode, LastError: d.LastError, NextAttemptAt: httpx.ISOTimePtr(d.NextAttemptAt),
			CreatedAt: httpx.ISOTime(d.CreatedAt)}
	}
	return out
}
