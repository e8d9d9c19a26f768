package customers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/quota"
)

// Record is a customer as the API shows it, without the rendering.
type Record struct {
	ID, ExternalUserID                string
	DisplayName, AvatarURL, EmailHash *string
	Metadata                          json.RawMessage
	Status, BillingState              string
	UsedBytes, LimitBytes             int64
	MaxSplats                         *int64
	DeletedAt                         *time.Time
	CreatedAt, UpdatedAt              time.Time
}

// customerQuery reads one customer. It is the hot read of every customer-scoped call, so it
// goes to pgx directly: ent's database/sql layer cost about half of the request's CPU here.
const customerQuery = `SELECT u.id, u.external_user_id, u.display_name, u.avatar_url, u.email_hash, u.metadata,
	u.status, u.billing_state, u.used_bytes, u.limit_bytes, u.max_splats, u.deleted_at, u.created_at, u.updated_at
	FROM external_users u WHERE u.integration_id = $1 AND u.external_user_id = $2`

// Customer reads the customer eu of the integration (a soft-deleted one too), or a 404.
func (s *Store) Customer(ctx context.Context, integrationID, eu string) (*Record, error) {
	var r Record
	err := s.DB.ReadRow(ctx, customerQuery, integrationID, eu).Scan(
		&r.ID, &r.ExternalUserID, &r.DisplayName, &r.AvatarURL, &r.EmailHash, &r.Metadata,
		&r.Status, &r.BillingState, &r.UsedBytes, &r.LimitBytes, &r.MaxSplats, &r.DeletedAt, &r.CreatedAt, &r.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.CustomerNotProvisioned(http.StatusNotFound)
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return &r, nil
}

// LiveSceneCount counts a customer's scenes outside the retained archive.
func (s *Store) LiveSceneCount(ctx context.Context, ownerID string) (int64, error) {
	var n int64
	err := s.DB.ReadRow(ctx, `SELECT count(*) FROM scenes WHERE owner_id = $1 AND archived_at IS NULL`, ownerID).Scan(&n)
	if err != nil {
		return 0, apperr.Internal(err)
	}
	return n, nil
}

// OpenUploads is what ownerID's open upload tickets hold now, read from the primary (the
// integrator reads it right after an abort or a commit, which must show at once).
func (s *Store) OpenUploads(ctx context.Context, ownerID string) (quota.OpenUploads, error) {
	o, err := quota.LoadOpenUploads(ctx, s.DB.Ent.UploadTicket, ownerID, "", time.Now())
	if err != nil {
		return o, apperr.Internal(err)
	}
	return o, nil
}
