package scenes

import (
	"context"
	"slices"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/integration"
	"github.com/splathost/splathost/ent/predicate"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
)

// ItemColumns are the scene columns a list, trending or rendition item is rendered from: every
// column but level_data, which items never show and which can be 256 KiB per scene; reading it
// for a page of 100 would cost up to 25 MiB of transfer and memory (and of cache) per request.
var ItemColumns = slices.DeleteFunc(slices.Clone(scene.Columns), func(c string) bool { return c == scene.FieldLevelData })

// WithOwnerEU loads the owner edge with only its external user id, which an item names.
func WithOwnerEU(q *ent.ExternalUserQuery) { q.Select(externaluser.FieldExternalUserID) }

// Trending returns the trending rule's scenes: a live, public, embeddable scene of the
// integration.
func Trending(integrationID string) []predicate.Scene {
	return []predicate.Scene{scene.IntegrationID(integrationID), scene.VisibilityEQ(scene.VisibilityPublic),
		scene.AllowEmbed(true), scene.ArchivedAtIsNil()}
}

// TrendingAmong returns the scenes of ids that trending may show (Trending), as items with
// their owners' external user ids, in no particular order. It reads the standby when there is
// one (db.DB.Read): trending promises no read-your-writes.
func (s *Store) TrendingAmong(ctx context.Context, integrationID string, ids []string) ([]*ent.Scene, error) {
	return s.DB.Read.Scene.Query().Where(Trending(integrationID)...).Where(scene.IDIn(ids...)).
		Select(ItemColumns...).WithOwner(WithOwnerEU).All(ctx)
}

// MostViewed returns up to n scenes trending may show, not in taken, by all-time views (then
// id): trending's backfill when fewer scenes had activity in the window. It reads the standby
// like TrendingAmong.
func (s *Store) MostViewed(ctx context.Context, integrationID string, taken []string, n int) ([]*ent.Scene, error) {
	return s.DB.Read.Scene.Query().Where(Trending(integrationID)...).Where(scene.IDNotIn(taken...)).
		Select(ItemColumns...).Order(ent.Desc(scene.FieldViewCount), ent.Asc(scene.FieldID)).Limit(n).
		WithOwner(WithOwnerEU).All(ctx)
}

// Renditions returns the newest limit scenes whose rendition is in state, of one integration
// or (integrationID "") all, as items with their owners' external user ids.
func (s *Store) Renditions(ctx context.Context, state scene.ProcessingState, integrationID string, limit int) ([]*ent.Scene, error) {
	q := s.DB.Ent.Scene.Query().Where(scene.ProcessingStateEQ(state))
	if integrationID != "" {
		q.Where(scene.IntegrationID(integrationID))
	}
	return q.Select(ItemColumns...).Order(ent.Desc(scene.FieldCreatedAt), ent.Desc(scene.FieldID)).Limit(limit).
		WithOwner(WithOwnerEU).All(ctx)
}

// Customer returns the integration's customer eu, or nil when there is none.
func (s *Store) Customer(ctx context.Context, integrationID, eu string) (*ent.ExternalUser, error) {
	u, err := s.DB.Ent.ExternalUser.Query().Where(db.Customer(integrationID, eu)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return u, nil
}

// OwnedLive returns owner's live scene id, read without a lock, or nil when id is not one.
func (s *Store) OwnedLive(ctx context.Context, owner *ent.ExternalUser, id string) (*ent.Scene, error) {
	sc, err := s.DB.Ent.Scene.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if sc.IntegrationID != owner.IntegrationID || sc.OwnerID != owner.ID || sc.ArchivedAt != nil {
		return nil, nil
	}
	return sc, nil
}

// ByID returns the scene id whatever its integration or state (the caller scopes it), with its
// owner's external user id; nil when there is none.
func (s *Store) ByID(ctx context.Context, id string) (*ent.Scene, error) {
	sc, err := s.DB.Ent.Scene.Query().Where(scene.ID(id)).WithOwner(WithOwnerEU).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	return sc, err
}

// UploadFolder returns the scene id the upload ticket whose folder is prefix was committed to:
// found false when there is no such ticket, a nil id while it is not part of a scene.
func (s *Store) UploadFolder(ctx context.Context, prefix string) (sceneID *string, found bool, err error) {
	t, err := s.DB.Ent.UploadTicket.Query().Where(uploadticket.Prefix(prefix)).Select(uploadticket.FieldSceneID).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return t.SceneID, true, nil
}

// IntegrationRevoked reports whether integration id is revoked; one that does not exist counts
// as revoked.
func (s *Store) IntegrationRevoked(ctx context.Context, id string) (bool, error) {
	in, err := s.DB.Ent.Integration.Query().Where(integration.ID(id)).Select(integration.FieldRevokedAt).Only(ctx)
	if ent.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return in.RevokedAt != nil, nil
}
