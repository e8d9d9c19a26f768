// Package user is the user service: the operator API (accounts, integrations and their keys)
// and the integrator's customers (external users) with their storage usage.
package user

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/webhooks"
)

// Service handles the user service's routes.
type Service struct {
	db  *db.DB
	log *slog.Logger
	// changed runs after an integration change commits. In one process it flushes the
	// gateway's cache at once, so an operator's revoke is in force when the call returns;
	// other processes hear the NOTIFY milliseconds later.
	changed func()
	// temporal starts the workflows a customer deletion hands its asset removal to.
	temporal Temporal
	// webhooks is the endpoint registry's settings (webhooks.go); events writes the webhook
	// events of customer deletions and the billing lifecycle.
	webhooks webhooks.Registry
	events   *events.Outbox
}

// Temporal is where the service starts workflows: a client and the worker's task queue. With a
// nil Client nothing is started from the request path, and the worker's purge re-drive starts
// the purges from their outbox rows instead (minutes later).
type Temporal struct {
	Client    client.Client
	TaskQueue string
}

// New returns the user service over the product database. onIntegrationChange, if not nil,
// runs after every committed change to an integration.
func New(d *db.DB, log *slog.Logger, onIntegrationChange func(), tc Temporal) *Service {
	if onIntegrationChange == nil {
		onIntegrationChange = func() {}
	}
	return &Service{db: d, log: log, changed: onIntegrationChange, temporal: tc, events: &events.Outbox{Log: log}}
}

// Register mounts the service's routes. The router must already establish the caller
// (the gateway in-process, or httpx.TrustSignedCaller in a service binary).
func (s *Service) Register(r fiber.Router) {
	r.Put("/api/v1/external-user", s.putExternalUser)
	r.Get("/api/v1/external-user", s.getExternalUser)
	r.Delete("/api/v1/external-user", s.deleteExternalUser)
	r.Get("/api/v1/external-user/usage", s.getUsage)
	s.registerWebhooks(r)

	// The operator's routes: httpx.AdminOnly refuses any other caller before the handler runs.
	r.Post("/admin/v1/accounts", httpx.AdminOnly, s.createAccount)
	r.Get("/admin/v1/accounts/:accountId", httpx.AdminOnly, s.getAccount)
	r.Patch("/admin/v1/accounts/:accountId", httpx.AdminOnly, s.patchAccount)
	r.Post("/admin/v1/integrations", httpx.AdminOnly, s.createIntegration)
	r.Get("/admin/v1/integrations/:integrationId", httpx.AdminOnly, s.getIntegration)
	r.Patch("/admin/v1/integrations/:integrationId", httpx.AdminOnly, s.patchIntegration)
	r.Post("/admin/v1/integrations/:integrationId/rotate", httpx.AdminOnly, s.rotateIntegration)
	r.Post("/admin/v1/integrations/:integrationId/revoke", httpx.AdminOnly, s.revokeIntegration)
	r.Get("/admin/v1/integrations/:integrationId/customers/:externalUserId/usage", httpx.AdminOnly, s.adminCustomerUsage)
}
