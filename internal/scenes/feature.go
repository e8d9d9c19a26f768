package scenes

import (
	"context"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
)

// ApplyFeatured is the featuring rule on a scene's current row: only a public scene with
// embedding allowed can be featured (409); asking for the state it already has changes nothing
// (false), featuredAt and updatedAt included; featuredAt records the first featuring only.
// It sets the new state on cur and reports whether there is anything to write.
func ApplyFeatured(cur *ent.Scene, featured bool, now time.Time) (bool, error) {
	switch {
	case featured && (cur.Visibility != scene.VisibilityPublic || !cur.AllowEmbed):
		return false, apperr.Conflict("only a public scene with embedding allowed can be featured")
	case cur.Featured == featured:
		return false, nil
	}
	cur.Featured = featured
	if featured && cur.FeaturedAt == nil {
		cur.FeaturedAt = &now
	}
	return true, nil
}

// Feature sets or clears a live scene's featured flag (ApplyFeatured) under its row lock, which
// orders it against a concurrent PATCH that makes the scene private, with its splat.updated
// event.
func (s *Store) Feature(ctx context.Context, integrationID, id string, featured bool) (*ent.Scene, error) {
	var sc *ent.Scene
	var hooks events.Batch
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		return lockScene(ctx, tx, live(integrationID, id), nil, func(cur *ent.Scene) error {
			changed, err := ApplyFeatured(cur, featured, s.Now())
			if err != nil || !changed {
				sc = cur
				return err
			}
			if sc, err = cur.Update().SetFeatured(cur.Featured).SetNillableFeaturedAt(cur.FeaturedAt).Save(ctx); err != nil {
				return err
			}
			if err := s.Events.EmitSplat(ctx, tx, &hooks, events.SplatUpdated, sc, ""); err != nil {
				return err
			}
			return db.NotifyScenesChanged(ctx, tx, integrationID, id)
		})
	})
	if err != nil {
		return nil, err
	}
	s.Events.Flush(ctx, &hooks)
	return sc, nil
}

// OwnerEU returns the external user id of the customer record ownerID.
func (s *Store) OwnerEU(ctx context.Context, ownerID string) (string, error) {
	eu, err := s.DB.Ent.ExternalUser.Query().Where(externaluser.ID(ownerID)).
		Select(externaluser.FieldExternalUserID).String(ctx)
	if err != nil {
		return "", apperr.Internal(err)
	}
	return eu, nil
}
