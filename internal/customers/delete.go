package customers

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/clonejob"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/quota"
)

// Deletion is what a committed customer deletion did.
type Deletion struct {
	Customer *ent.ExternalUser
	SceneIDs []string
	// Purge is the outbox row of the objects left to remove; nil when there are none.
	Purge *ent.AssetPurge
	// DeletedNow says this call deleted the customer (not a repeat of an earlier deletion).
	DeletedNow bool
	// Hooks are the deletion's webhook events, to flush after the commit.
	Hooks events.Batch
	// Answer is the 200 answer, recorded with the effect.
	Answer *idempotency.Recorded
}

// Delete soft-deletes the customer k and removes every scene they own, in one transaction
// (retried on a deadlock): the scene rows go, their storage and slots are released from the
// account (quota.Clear), the customer becomes status 'deleted' with deletedAt = now and its
// counters at 0, an outbox row (asset_purges) records every stored object left to remove, and
// the webhook events (splat.deleted for each scene, externalUser.deleted once) and the answer
// rendered by answer are written. Deleting a deleted customer changes nothing but the answer:
// no scenes, no events, deletedAt kept.
func (s *Store) Delete(ctx context.Context, k Key, now time.Time, answer func(*Deletion) any) (*Deletion, error) {
	var del *Deletion
	err := s.inTxRetry(ctx, func(tx *ent.Tx) error {
		var err error
		if del, err = deleteCustomer(ctx, tx, k, now); err != nil {
			return err
		}
		if del.DeletedNow {
			for _, id := range del.SceneIDs {
				ref := events.SceneRef{SplatID: id, ExternalUserID: k.ExternalUserID}
				if err := s.Events.Emit(ctx, tx, &del.Hooks, k.IntegrationID, events.SplatDeleted, events.Value(ref)); err != nil {
					return err
				}
			}
			if err := s.Events.Emit(ctx, tx, &del.Hooks, k.IntegrationID, events.ExternalUserDeleted,
				events.Value(events.ExternalUserData{ExternalUserID: k.ExternalUserID})); err != nil {
				return err
			}
		}
		del.Answer, err = idempotency.Record(ctx, tx, http.StatusOK, answer(del))
		return err
	})
	if err != nil {
		return nil, err
	}
	return del, nil
}

// deleteCustomer is the deletion transaction. Lock order: the customer's scene rows, then the
// customer row, then the account row — the scene service takes scene → customer → account (a
// scene DELETE or PATCH locks its scene, then release/reserve lock the customer and the
// account), so taking the customer first here could deadlock against it.
func deleteCustomer(ctx context.Context, tx *ent.Tx, k Key, now time.Time) (*Deletion, error) {
	u, err := tx.ExternalUser.Query().Where(db.Customer(k.IntegrationID, k.ExternalUserID)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.CustomerNotProvisioned(http.StatusNotFound)
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.Scene.Query().Where(scene.OwnerID(u.ID)).ForUpdate().IDs(ctx); err != nil {
		return nil, err
	}
	if u, err = tx.ExternalUser.Query().Where(externaluser.ID(u.ID)).ForUpdate().Only(ctx); err != nil {
		return nil, err
	}
	// Every path that creates a scene holds this customer's row lock (reserve), so from here the
	// set of scenes is fixed. Reading it again picks up any committed while we waited.
	scenes, err := tx.Scene.Query().Where(scene.OwnerID(u.ID)).ForUpdate().
		Select(scene.FieldID, scene.FieldIntegrationID, scene.FieldAssetKeys, scene.FieldLodFolderKey, scene.FieldRenditionPrefix,
			scene.FieldFileSizeBytes, scene.FieldHoldsSplatSlot, scene.FieldArchivedAt).All(ctx)
	if err != nil {
		return nil, err
	}
	// A clone job in progress holds a reservation (its row): it goes with the customer, and the
	// job, finding its row gone, removes its copies and creates nothing (lock order customer,
	// then job rows, as the clone activities take them).
	jobs, err := tx.CloneJob.Query().Where(clonejob.OwnerID(u.ID)).ForUpdate().All(ctx)
	if err != nil {
		return nil, err
	}
	if len(jobs) > 0 {
		if _, err := tx.CloneJob.Delete().Where(clonejob.OwnerID(u.ID)).Exec(ctx); err != nil {
			return nil, err
		}
	}
	if err := quota.Clear(ctx, tx, u.ID, k.AccountID, held(scenes, jobs)); err != nil {
		return nil, err
	}
	del := &Deletion{SceneIDs: make([]string, len(scenes))}
	for i, sc := range scenes {
		del.SceneIDs[i] = sc.ID
	}
	if len(scenes) > 0 {
		if _, err := tx.Scene.Delete().Where(scene.OwnerID(u.ID)).Exec(ctx); err != nil {
			return nil, err
		}
		if err := db.NotifyScenesChanged(ctx, tx, k.IntegrationID, del.SceneIDs...); err != nil {
			return nil, err
		}
		keys, prefixes := sceneObjects(scenes)
		del.Purge, err = tx.AssetPurge.Create().SetIntegrationID(k.IntegrationID).SetOwnerID(u.ID).
			SetExternalUserID(u.ExternalUserID).SetKeys(keys).SetPrefixes(prefixes).SetSceneCount(len(scenes)).Save(ctx)
		if err != nil {
			return nil, err
		}
	}
	up := u.Update().SetStatus(externaluser.StatusDeleted)
	if u.DeletedAt == nil || u.Status != externaluser.StatusDeleted {
		up.SetDeletedAt(now)
		del.DeletedNow = true
		if err := notifyCustomer(ctx, tx, k.IntegrationID, k.ExternalUserID); err != nil {
			return nil, err
		}
	}
	if del.Customer, err = up.Save(ctx); err != nil {
		return nil, err
	}
	return del, nil
}

// held is what a customer holds of the account's counters: the live scenes' bytes and slots
// (archived scenes were released when they were archived) and the clone jobs' reservations.
func held(scenes []*ent.Scene, jobs []*ent.CloneJob) quota.Delta {
	var d quota.Delta
	for _, sc := range scenes {
		if sc.ArchivedAt == nil {
			d = d.Add(quota.Charge{Bytes: sc.FileSizeBytes, Slot: sc.HoldsSplatSlot})
		}
	}
	for _, j := range jobs {
		d = d.Add(quota.Charge{Bytes: j.Bytes})
	}
	return d
}

// sceneObjects lists what the purge removes: each scene's objects as objectkeys.SceneObjects
// names them (asset keys, LOD and rendition folders), once each.
func sceneObjects(scenes []*ent.Scene) (keys, prefixes []string) {
	for _, sc := range scenes {
		k, p := objectkeys.SceneObjects(sc.IntegrationID, sc.AssetKeys, sc.LodFolderKey, sc.RenditionPrefix)
		keys, prefixes = append(keys, k...), append(prefixes, p...)
	}
	slices.Sort(keys)
	slices.Sort(prefixes)
	return slices.Compact(keys), slices.Compact(prefixes)
}
