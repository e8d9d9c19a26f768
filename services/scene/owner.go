package scene

import (
	"context"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
)

// customer returns the caller's customer (integration + EU), or nil when there is none.
func (s *Service) customer(ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error) {
	u, err := s.db.Ent.ExternalUser.Query().
		Where(db.Customer(caller.IntegrationID, eu)).
		Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return u, nil
}

// uploader returns the caller's customer when they may upload: the spec answers 401 for an
// unknown or inactive customer on the upload endpoints.
func (s *Service) uploader(ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error) {
	u, err := s.customer(ctx, caller, eu)
	if err != nil {
		return nil, err
	}
	if u == nil || u.Status != externaluser.StatusActive {
		return nil, apperr.Unauthorized("external user not provisioned or inactive")
	}
	return u, nil
}

// committer returns the caller's customer when they may commit: 404 for an unknown customer,
// 401 for one not active.
func (s *Service) committer(ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error) {
	u, err := s.customer(ctx, caller, eu)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, apperr.NotFound("external user not found")
	}
	if u.Status != externaluser.StatusActive {
		return nil, apperr.Unauthorized("external user is inactive")
	}
	return u, nil
}

// sceneOwner returns the caller's customer for a change to one of their scenes: an unknown
// customer answers the scene's 404, so the answer never tells whether the customer exists.
func (s *Service) sceneOwner(ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error) {
	u, err := s.customer(ctx, caller, eu)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, errSceneNotFound()
	}
	return u, nil
}
