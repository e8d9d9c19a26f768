package customers

import (
	"context"
	"errors"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/integration"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/ids"
)

// Integration is an integration's settings as the operator edits them.
type Integration struct {
	ProductSlug  string
	Capabilities []string
	RestAccess   bool
	// FrameAncestors are the CSP sources allowed to frame the embeds; nil is none set.
	FrameAncestors []string
	// SecretHash is the hash of the secret key (credentials.HashSecret).
	SecretHash []byte
	// RevokedAt is set once the integration is revoked; it stays set.
	RevokedAt *time.Time
}

// IntegrationPatch is a validated PATCH /admin/v1/integrations/:id body: zero values are
// omitted fields.
type IntegrationPatch struct {
	ProductSlug    string
	Capabilities   []string
	RestAccess     *bool
	FrameAncestors []string
	// HasFrames says frameAncestors was supplied; ClearFrames that it was null.
	HasFrames, ClearFrames bool
}

// Apply writes the supplied fields into in.
func (p *IntegrationPatch) Apply(in *Integration) {
	if p.ProductSlug != "" {
		in.ProductSlug = p.ProductSlug
	}
	if p.Capabilities != nil {
		in.Capabilities = p.Capabilities
	}
	if p.RestAccess != nil {
		in.RestAccess = *p.RestAccess
	}
	if p.HasFrames {
		in.FrameAncestors = p.FrameAncestors
	} else if p.ClearFrames {
		in.FrameAncestors = nil
	}
}

// Unchanged, returned by an UpdateIntegration function, leaves the integration as it is:
// nothing is written and no process is told.
var Unchanged = errors.New("unchanged")

// integrationOf is the settings of an integration row.
func integrationOf(in *ent.Integration) Integration {
	return Integration{ProductSlug: in.ProductSlug, Capabilities: in.Capabilities, RestAccess: in.RestAccess,
		FrameAncestors: in.FrameAncestors, SecretHash: in.SecretHash, RevokedAt: in.RevokedAt}
}

// CreateIntegration stores a new integration of an existing account (404 otherwise) with the
// settings in and the public key publicKey, and tells every process.
func (s *Store) CreateIntegration(ctx context.Context, accountID, publicKey string, in Integration) (*ent.Integration, error) {
	if _, err := s.Account(ctx, accountID); err != nil {
		return nil, err
	}
	var out *ent.Integration
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		var err error
		out, err = tx.Integration.Create().SetAccountID(accountID).SetProductSlug(in.ProductSlug).
			SetCapabilities(in.Capabilities).SetRestAccess(in.RestAccess).SetPublicKey(publicKey).
			SetSecretHash(in.SecretHash).SetFrameAncestors(in.FrameAncestors).Save(ctx)
		if err != nil {
			return err
		}
		return notifyIntegration(ctx, tx, out.ID)
	})
	return out, err
}

// Integration reads an integration; a malformed or unknown id is a 404.
func (s *Store) Integration(ctx context.Context, id string) (*ent.Integration, error) {
	return findIntegration(ctx, s.DB.Ent.Integration, id, false)
}

// UpdateIntegration runs fn on the settings of integration id under its row lock, stores what
// fn left and tells every process to drop its cached integrations; fn returning Unchanged
// writes nothing and returns the row as it is.
func (s *Store) UpdateIntegration(ctx context.Context, id string, fn func(*Integration) error) (*ent.Integration, error) {
	var out *ent.Integration
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		cur, err := findIntegration(ctx, tx.Integration, id, true)
		if err != nil {
			return err
		}
		in := integrationOf(cur)
		if err := fn(&in); errors.Is(err, Unchanged) {
			out = cur
			return nil
		} else if err != nil {
			return err
		}
		up := cur.Update().SetProductSlug(in.ProductSlug).SetCapabilities(in.Capabilities).SetRestAccess(in.RestAccess).
			SetSecretHash(in.SecretHash).SetNillableRevokedAt(in.RevokedAt)
		if in.FrameAncestors != nil {
			up.SetFrameAncestors(in.FrameAncestors)
		} else {
			up.ClearFrameAncestors()
		}
		if out, err = up.Save(ctx); err != nil {
			return err
		}
		return notifyIntegration(ctx, tx, out.ID)
	})
	return out, err
}

// findIntegration reads integration id through q, locking its row when lock is set.
func findIntegration(ctx context.Context, q *ent.IntegrationClient, id string, lock bool) (*ent.Integration, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("integration not found")
	}
	query := q.Query().Where(integration.ID(id))
	if lock {
		query.ForUpdate()
	}
	in, err := query.Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFound("integration not found")
	}
	return in, err
}
