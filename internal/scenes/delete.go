package scenes

import (
	"context"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/assetpurge"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/quota"
)

// Released is what deleting a scene gives back to its owner and account: its bytes, and its
// splat slot when it holds one (a scene archived by the billing lifecycle released both
// already, and is never deleted here).
func Released(sc *ent.Scene) quota.Charge {
	return quota.Charge{Bytes: sc.FileSizeBytes, Slot: sc.HoldsSplatSlot}
}

// Delete removes owner's live scene id in one transaction: the row, the release of its storage
// and slot (Released), the outbox row (asset_purges, kind scene) of its stored objects and
// view records, and its splat.deleted event. The caller starts the purge the returned row
// names (the worker's purge re-drive starts it otherwise) and drops its cached copies.
func (s *Store) Delete(ctx context.Context, accountID string, owner *ent.ExternalUser, id string) (*ent.AssetPurge, error) {
	var purge *ent.AssetPurge
	var hooks events.Batch
	where := append(live(owner.IntegrationID, id), scene.OwnerID(owner.ID))
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		// Lock order: the scene row, then release's customer → account. A concurrent second
		// DELETE waits here and then finds no row, so the scene is released exactly once.
		return lockScene(ctx, tx, where, nil, func(sc *ent.Scene) error {
			if err := tx.Scene.DeleteOneID(sc.ID).Exec(ctx); err != nil {
				return err
			}
			if err := quota.Release(ctx, tx, sc.OwnerID, accountID, Released(sc)); err != nil {
				return err
			}
			keys, prefixes := objectkeys.SceneObjects(sc.IntegrationID, sc.AssetKeys, sc.LodFolderKey, sc.RenditionPrefix)
			var err error
			purge, err = tx.AssetPurge.Create().SetKind(assetpurge.KindScene).SetIntegrationID(sc.IntegrationID).
				SetOwnerID(owner.ID).SetExternalUserID(owner.ExternalUserID).SetSceneID(sc.ID).
				SetKeys(keys).SetPrefixes(prefixes).SetSceneCount(1).Save(ctx)
			if err != nil {
				return err
			}
			if err := s.Events.Emit(ctx, tx, &hooks, sc.IntegrationID, events.SplatDeleted,
				events.Value(events.SceneRef{SplatID: sc.ID, ExternalUserID: owner.ExternalUserID})); err != nil {
				return err
			}
			return db.NotifyScenesChanged(ctx, tx, sc.IntegrationID, sc.ID)
		})
	})
	if err != nil {
		return nil, err
	}
	s.Events.Flush(ctx, &hooks)
	return purge, nil
}
