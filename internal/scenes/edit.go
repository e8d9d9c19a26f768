package scenes

import (
	"context"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/roomproto"
)

// Edit is a checked PATCH of a scene's own fields by its owner; a nil field is left as it is.
type Edit struct {
	Title          *string
	Description    *string
	Visibility     *scene.Visibility
	AllowEmbed     *bool
	AllowClone     *bool
	AllowComments  *bool
	AllowReactions *bool
	// LevelData replaces the scene's viewer state when HasLevelData; nil clears it.
	LevelData    map[string]any
	HasLevelData bool
}

// Unfeatures is the curation rule of an edit: a featured scene must stay featurable, so making
// it private or non-embeddable takes it off the curated set (featuring it again needs a new
// PATCH featured true, which keeps the original featuredAt). Otherwise a private scene could be
// served from the featured list.
func (e *Edit) Unfeatures(cur *ent.Scene) bool {
	return cur.Featured && (e.Visibility != nil && *e.Visibility == scene.VisibilityPrivate || e.AllowEmbed != nil && !*e.AllowEmbed)
}

// Publishes reports whether the edit makes cur public for the first time.
func (e *Edit) Publishes(cur *ent.Scene) bool {
	return e.Visibility != nil && *e.Visibility == scene.VisibilityPublic && cur.FirstPublishedAt == nil
}

// ChangesRoom reports whether the edit writes a field the multiplayer room edits (a save or a
// publish); allowEmbed or allowClone alone leave the room's draft as it is.
func (e *Edit) ChangesRoom() bool {
	return e.Title != nil || e.Description != nil || e.Visibility != nil || e.AllowComments != nil ||
		e.AllowReactions != nil || e.HasLevelData
}

// Apply sets the edit's fields on up, and the curation rule's outcome (Unfeatures).
func (e *Edit) Apply(cur *ent.Scene, up *ent.SceneUpdateOne) {
	up.SetNillableTitle(e.Title).SetNillableDescription(e.Description).SetNillableAllowClone(e.AllowClone).
		SetNillableAllowComments(e.AllowComments).SetNillableAllowReactions(e.AllowReactions).
		SetNillableAllowEmbed(e.AllowEmbed).SetNillableVisibility(e.Visibility)
	if e.HasLevelData && e.LevelData == nil {
		up.ClearLevelData()
	} else if e.HasLevelData {
		up.SetLevelData(e.LevelData)
	}
	if e.Unfeatures(cur) {
		up.SetFeatured(false)
	}
}

// NeedsSlot is the first-publish rule of a clone: a clone holds no scene slot until it is first
// made public, and then takes one for good (making it private again does not free it). Any
// other scene holds its slot already.
func NeedsSlot(cur *ent.Scene) bool { return cur.ClonedFromID != nil && !cur.HoldsSplatSlot }

// StorageFits re-checks storage at a clone's first publish, with nothing extra: its bytes were
// charged when it was copied, so the customer (and, without overage, the account) must not be
// over its allocation; size is the scene's, named in the 413.
func StorageFits(u *ent.ExternalUser, a *ent.Account, size int64) error {
	if u.UsedBytes > u.LimitBytes {
		return quota.StorageExceeded("customer", u.UsedBytes, u.LimitBytes, size)
	}
	if !a.Overage && a.UsedBytes > a.StorageBundleBytes {
		return quota.StorageExceeded("account", a.UsedBytes, a.StorageBundleBytes, size)
	}
	return nil
}

// Save is the part of an edit the caller applies under the same row lock and transaction (an
// editor save's attached and released uploads); it returns the outbox row of objects to purge.
type Save func(ctx context.Context, tx *ent.Tx, cur *ent.Scene, up *ent.SceneUpdateOne) (*ent.AssetPurge, error)

// Update applies edit (and save, when not nil) to owner's live scene id in one transaction: the
// row lock, save, the fields (Edit.Apply), a first publish (NeedsSlot: the caps and storage
// re-checked, StorageFits), the splat.updated and splat.published events, the multiplayer
// room's save notice and the scene's change notice. It returns the scene and the outbox row
// save wrote, whose purge the caller starts.
func (s *Store) Update(ctx context.Context, accountID string, owner *ent.ExternalUser, id string, edit *Edit, save Save) (*ent.Scene, *ent.AssetPurge, error) {
	var sc *ent.Scene
	var purge *ent.AssetPurge
	var hooks events.Batch
	where := append(live(owner.IntegrationID, id), scene.OwnerID(owner.ID))
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		// Lock order: the scene row, then (attached uploads, first publish of a clone) the
		// customer and account rows — the same order Delete takes.
		return lockScene(ctx, tx, where, nil, func(cur *ent.Scene) error {
			up := cur.Update()
			var err error
			if save != nil {
				if purge, err = save(ctx, tx, cur, up); err != nil {
					return err
				}
			}
			edit.Apply(cur, up)
			if err := s.firstPublish(ctx, tx, cur, accountID, edit, up); err != nil {
				return err
			}
			if sc, err = up.Save(ctx); err != nil {
				return err
			}
			if err := s.Events.EmitSplat(ctx, tx, &hooks, events.SplatUpdated, sc, owner.ExternalUserID); err != nil {
				return err
			}
			// Published: the scene became public (spec, Scene visibility: PATCH visibility 'public').
			if cur.Visibility != scene.VisibilityPublic && sc.Visibility == scene.VisibilityPublic {
				if err := s.Events.EmitSplat(ctx, tx, &hooks, events.SplatPublished, sc, owner.ExternalUserID); err != nil {
					return err
				}
			}
			// The scene's multiplayer room learns of the save from here, never from a client: its
			// draft is cleared and its participants get the stored scene, once this commits.
			if edit.ChangesRoom() {
				q, args := roomproto.SceneSaved(owner.IntegrationID, id)
				if _, err := tx.ExecContext(ctx, q, args...); err != nil {
					return err
				}
			}
			return db.NotifyScenesChanged(ctx, tx, owner.IntegrationID, id)
		})
	})
	if err != nil {
		return nil, nil, err
	}
	s.Events.Flush(ctx, &hooks)
	return sc, purge, nil
}

// firstPublish records an edit's first publish of cur on up: for a clone (NeedsSlot) the scene
// caps (customer and account maxSplats) and storage (StorageFits) are checked again and a slot
// is taken; any scene records first_published_at.
func (s *Store) firstPublish(ctx context.Context, tx *ent.Tx, cur *ent.Scene, accountID string, edit *Edit, up *ent.SceneUpdateOne) error {
	if !edit.Publishes(cur) {
		return nil
	}
	if NeedsSlot(cur) {
		u, a, err := quota.Reserve(ctx, tx, cur.OwnerID, accountID, quota.Charge{Slot: true})
		if err != nil {
			return err
		}
		if err := StorageFits(u, a, cur.FileSizeBytes); err != nil {
			return err
		}
		up.SetHoldsSplatSlot(true)
	}
	up.SetFirstPublishedAt(s.Now())
	return nil
}
