package scene

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
)

// customer returns the caller's customer (integration + EU), or nil when there is none.
func (s *Service) customer(ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error) {
	return s.scenes.Customer(ctx, caller.IntegrationID, eu)
}

// customerOr returns the caller's customer, answering missing when there is none and, unless
// inactive is nil, inactive when it is not active.
func (s *Service) customerOr(ctx context.Context, caller *httpx.Caller, eu string, missing, inactive error) (*ent.ExternalUser, error) {
	u, err := s.customer(ctx, caller, eu)
	switch {
	case err != nil:
		return nil, err
	case u == nil:
		return nil, missing
	case inactive != nil && u.Status != externaluser.StatusActive:
		return nil, inactive
	}
	return u, nil
}

// uploader returns the caller's customer when they may upload: the spec answers 401 for an
// unknown or inactive customer on the upload endpoints, and the code tells which (and either
// from a wrong key).
func (s *Service) uploader(ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error) {
	return s.customerOr(ctx, caller, eu, apperr.CustomerNotProvisioned(http.StatusUnauthorized), errCustomerInactive)
}

// errCustomerInactive is the 401 of a customer route whose customer is not active.
var errCustomerInactive = apperr.CustomerInactive(http.StatusUnauthorized, "external user is inactive")

// committer returns the caller's customer when they may commit: 404 for an unknown customer,
// 401 for one not active.
func (s *Service) committer(ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error) {
	return s.customerOr(ctx, caller, eu, apperr.CustomerNotProvisioned(http.StatusNotFound), errCustomerInactive)
}

// sceneOwner returns the caller's customer for a change to one of their scenes: an unknown
// customer answers the scene's 404, so the answer never tells whether the customer exists.
func (s *Service) sceneOwner(ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error) {
	return s.customerOr(ctx, caller, eu, errSceneNotFound(), nil)
}

// ownerRule is one of the checks above that find the caller's customer for a route: each
// answers its own status for a missing or inactive customer.
type ownerRule func(s *Service, ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error)

// keyCustomer is the prologue of a customer route without a scene: the key caller with its EU
// (400 without), then their customer by rule.
func (s *Service) keyCustomer(c *fiber.Ctx, rule ownerRule) (*ent.ExternalUser, error) {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return nil, err
	}
	return rule(s, c.UserContext(), caller, eu)
}

// customerCall is who a customer route acts for: the key caller, its EU and the customer the
// route's rule found.
type customerCall struct {
	caller *httpx.Caller
	eu     string
	owner  *ent.ExternalUser
}

// customerBody is the prologue of a customer route with a body: the key caller with its EU,
// the body by parse, then (for a valid body only, so a bad body is its 400 whoever sends it)
// the customer by rule.
func customerBody[T any](s *Service, c *fiber.Ctx, parse func(body []byte, caller *httpx.Caller) (T, error), rule ownerRule) (T, customerCall, error) {
	var body T
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return body, customerCall{}, err
	}
	if body, err = parse(c.Body(), caller); err != nil {
		return body, customerCall{}, err
	}
	owner, err := rule(s, c.UserContext(), caller, eu)
	return body, customerCall{caller: caller, eu: eu, owner: owner}, err
}

// sceneCall is a customer's request on one scene: customerCall and the path's scene id.
type sceneCall struct {
	customerCall
	id string
}

// customerOnScene is customerScene, then the customer by rule: the id is checked first, so a
// malformed one answers 404 whatever the customer.
func (s *Service) customerOnScene(c *fiber.Ctx, rule ownerRule) (sceneCall, error) {
	caller, eu, id, err := customerScene(c)
	if err != nil {
		return sceneCall{}, err
	}
	owner, err := rule(s, c.UserContext(), caller, eu)
	return sceneCall{customerCall{caller: caller, eu: eu, owner: owner}, id}, err
}
