package user

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/account"
	"github.com/splathost/splathost/ent/clonejob"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows"
	"github.com/splathost/splathost/workflows/contract"
)

// purgeStartTimeout bounds the start of a purge workflow after the commit. It runs detached
// from the request: the outbox row makes the start durable, so the answer does not wait for it.
const purgeStartTimeout = 30 * time.Second

// txAttempts is how often the deletion transaction runs when Postgres aborts it for a deadlock.
const txAttempts = 3

// deletedCustomerView is the interface's reduced record returned by DELETE: only these fields.
type deletedCustomerView struct {
	ID             string  `json:"id"`
	ExternalUserID string  `json:"externalUserId"`
	Status         string  `json:"status"`
	BillingState   string  `json:"billingState"`
	UsedBytes      int64   `json:"usedBytes"`
	DeletedAt      *string `json:"deletedAt"`
}

// customerDeletion is what the deletion transaction did.
type customerDeletion struct {
	customer *ent.ExternalUser
	sceneIDs []string
	// purge is the outbox row of the objects left to remove; nil when there are none.
	purge *ent.AssetPurge
	// deletedNow says this call deleted the customer (not a repeat of an earlier deletion).
	deletedNow bool
}

// deleteExternalUser answers DELETE /api/v1/external-user: the customer is soft-deleted and
// every scene they own is removed. The spec's side effects, in order:
//
//  1. In one transaction: the scene rows go, their storage and scene slots are released from the
//     account, the customer becomes status 'deleted' with deletedAt set and its counters at 0,
//     and an outbox row (asset_purges) records every stored object left to remove.
//  2. After the commit: view and comment records are removed (hook), and the
//     PurgeCustomerAssets workflow is started from the outbox row. If the process dies or
//     Temporal is unreachable in between, the worker's purge re-drive starts it later: the
//     objects are never forgotten.
//
// Deleting a customer who is already deleted is idempotent: 200 with deletedSplatCount 0 and
// the same reduced record (deletedAt keeps the first deletion's time). GET keeps answering the
// soft-deleted record with status 'deleted' (the spec: "soft-deleted customers report
// 'deleted'"); a PUT provisions the customer again.
func (s *Service) deleteExternalUser(c *fiber.Ctx) error {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	var del *customerDeletion
	// hooks are the deletion's webhook events: splat.deleted for each scene it removed and
	// externalUser.deleted, once (a repeated DELETE of a deleted customer changes nothing).
	var hooks events.Batch
	var answer *idempotency.Recorded
	for attempt := 1; ; attempt++ {
		err = s.db.InTx(ctx, func(tx *ent.Tx) error {
			var err error
			hooks = events.Batch{}
			if del, err = deleteCustomer(ctx, tx, caller, eu, time.Now()); err != nil {
				return err
			}
			if del.deletedNow {
				for _, id := range del.sceneIDs {
					ref := events.SceneRef{SplatID: id, ExternalUserID: eu}
					if err := s.events.Emit(ctx, tx, &hooks, caller.IntegrationID, events.SplatDeleted, events.Value(ref)); err != nil {
						return err
					}
				}
				if err := s.events.Emit(ctx, tx, &hooks, caller.IntegrationID, events.ExternalUserDeleted,
					events.Value(events.ExternalUserData{ExternalUserID: eu})); err != nil {
					return err
				}
			}
			u := del.customer
			answer, err = idempotency.Record(ctx, tx, fiber.StatusOK, fiber.Map{"status": "success", "deletedSplatCount": len(del.sceneIDs),
				"externalUser": deletedCustomerView{ID: u.ID, ExternalUserID: u.ExternalUserID, Status: string(u.Status),
					BillingState: string(u.BillingState), UsedBytes: u.UsedBytes, DeletedAt: httpx.ISOTimePtr(u.DeletedAt)}})
			return err
		})
		if err == nil || attempt == txAttempts || !retryable(err) {
			break
		}
	}
	if err != nil {
		return err
	}
	s.events.Flush(ctx, &hooks)
	bg := context.WithoutCancel(ctx)
	if len(del.sceneIDs) > 0 {
		if err := s.deleteCustomerViews(bg, caller.IntegrationID, del.sceneIDs); err != nil {
			s.log.Warn("deleting the view records of a deleted customer's scenes", "customer", del.customer.ID, "error", err)
		}
	}
	if del.purge != nil {
		s.startPurge(bg, del.purge)
	}
	return answer.Send(c)
}

// deleteCustomer is the deletion transaction. Lock order: the customer's scene rows, then the
// customer row, then the account row — the scene service takes scene → customer → account (a
// scene DELETE or PATCH locks its scene, then release/reserve lock the customer and the
// account), so taking the customer first here could deadlock against it.
func deleteCustomer(ctx context.Context, tx *ent.Tx, caller *httpx.Caller, eu string, now time.Time) (*customerDeletion, error) {
	u, err := tx.ExternalUser.Query().
		Where(db.Customer(caller.IntegrationID, eu)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFound("external user not found")
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
	// Archived (retained) scenes were released from the counters when they were archived.
	var bytes, slots int64
	for _, sc := range scenes {
		if sc.ArchivedAt == nil {
			bytes += sc.FileSizeBytes
			if sc.HoldsSplatSlot {
				slots++
			}
		}
	}
	// A clone job in progress holds a reservation (its row): it goes with the customer, and the
	// job, finding its row gone, removes its copies and creates nothing (lock order customer,
	// then job rows, as the clone activities take them).
	jobs, err := tx.CloneJob.Query().Where(clonejob.OwnerID(u.ID)).ForUpdate().All(ctx)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		bytes += j.Bytes
	}
	if len(jobs) > 0 {
		if _, err := tx.CloneJob.Delete().Where(clonejob.OwnerID(u.ID)).Exec(ctx); err != nil {
			return nil, err
		}
	}
	if bytes != 0 || slots != 0 {
		a, err := tx.Account.Query().Where(account.ID(caller.AccountID)).ForUpdate().Only(ctx)
		if err != nil {
			return nil, err
		}
		if err := a.Update().AddUsedBytes(-bytes).AddSplatCount(-slots).Exec(ctx); err != nil {
			return nil, err
		}
	}
	del := &customerDeletion{sceneIDs: make([]string, len(scenes))}
	for i, sc := range scenes {
		del.sceneIDs[i] = sc.ID
	}
	if len(scenes) > 0 {
		if _, err := tx.Scene.Delete().Where(scene.OwnerID(u.ID)).Exec(ctx); err != nil {
			return nil, err
		}
		if err := db.NotifyScenesChanged(ctx, tx, caller.IntegrationID, del.sceneIDs...); err != nil {
			return nil, err
		}
		keys, prefixes := sceneObjects(scenes)
		del.purge, err = tx.AssetPurge.Create().SetIntegrationID(caller.IntegrationID).SetOwnerID(u.ID).
			SetExternalUserID(u.ExternalUserID).SetKeys(keys).SetPrefixes(prefixes).SetSceneCount(len(scenes)).Save(ctx)
		if err != nil {
			return nil, err
		}
	}
	up := u.Update().SetStatus(externaluser.StatusDeleted).SetUsedBytes(0).SetSplatCount(0)
	if u.DeletedAt == nil || u.Status != externaluser.StatusDeleted {
		up.SetDeletedAt(now)
		del.deletedNow = true
		if err := notifyCustomer(ctx, tx, caller.IntegrationID, eu); err != nil {
			return nil, err
		}
	}
	if del.customer, err = up.Save(ctx); err != nil {
		return nil, err
	}
	return del, nil
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

// startPurge starts the purge workflow of an outbox row, detached from the request. A failure
// is only logged: the row stays open and the worker's re-drive starts it.
func (s *Service) startPurge(ctx context.Context, p *ent.AssetPurge) {
	if s.temporal.Client == nil {
		s.log.Info("no Temporal client; the purge re-drive will start the purge", "purge", p.ID)
		return
	}
	in := workflows.PurgeInput{PurgeID: p.ID, IntegrationID: p.IntegrationID,
		OwnerID: p.OwnerID, ExternalUserID: p.ExternalUserID}
	go func() {
		ctx, cancel := context.WithTimeout(ctx, purgeStartTimeout)
		defer cancel()
		if _, err := workflows.StartPurge(ctx, s.temporal.Client, s.temporal.TaskQueue, in); err != nil {
			s.log.Warn("starting a purge; the re-drive will retry", "purge", p.ID, "error", err)
		}
	}()
}

// deleteCustomerViews removes the view records of a deleted customer's scenes (spec: the
// cascade removes "view/comment records") by starting DeleteSceneViews workflows, which retry
// until ClickHouse has them gone. It runs after the scene rows are gone, so a view recorded
// concurrently may survive it; trending and viewCount read only live scenes. There is no
// comment store.
func (s *Service) deleteCustomerViews(ctx context.Context, integrationID string, sceneIDs []string) error {
	if s.temporal.Client == nil {
		return errors.New("no Temporal client: the view records stay until their partitions expire")
	}
	views := workflows.ViewDeletions{Client: s.temporal.Client, TaskQueue: s.temporal.TaskQueue}
	for start := 0; start < len(sceneIDs); start += contract.MaxViewDeletion {
		if err := views.Delete(ctx, integrationID, sceneIDs[start:min(start+contract.MaxViewDeletion, len(sceneIDs))]); err != nil {
			return err
		}
	}
	return nil
}

// retryable reports a transaction Postgres aborted for a deadlock or a serialization failure;
// running it again is safe.
func retryable(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40P01" || pg.Code == "40001")
}
