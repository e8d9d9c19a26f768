package customers

import (
	"context"
	"net/http"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/account"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/quota"
)

// Put is the outcome of a committed PUT: the customer after it, the retention timers to start
// and cancel, its webhook events to flush and its recorded answer.
type Put struct {
	Customer *ent.ExternalUser
	Start    []Timer
	Cancel   []Timer
	Hooks    events.Batch
	Answer   *idempotency.Recorded
}

// Put provisions or updates the customer k with p in one transaction (retried on a deadlock):
// create-if-missing, lock, patch, the billing lifecycle (PlanLifecycle), the retention events,
// and the 200 answer rendered by answer and recorded with the effect.
func (s *Store) Put(ctx context.Context, k Key, p *Patch, answer func(*ent.ExternalUser) any) (*Put, error) {
	var out *Put
	err := s.inTxRetry(ctx, func(tx *ent.Tx) error {
		out = &Put{}
		if err := s.putTx(ctx, tx, k, p, out); err != nil {
			return err
		}
		var err error
		out.Answer, err = idempotency.Record(ctx, tx, http.StatusOK, answer(out.Customer))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// putTx is the PUT transaction: upsert, lock, patch, then the billing lifecycle.
func (s *Store) putTx(ctx context.Context, tx *ent.Tx, k Key, p *Patch, out *Put) error {
	// Create-if-missing with ON CONFLICT DO NOTHING, then lock the row: concurrent first
	// PUTs of one customer serialize on the unique index and produce exactly one record.
	if _, err := tx.ExecContext(ctx, `INSERT INTO external_users
		(id, created_at, updated_at, integration_id, external_user_id, limit_bytes, status, billing_state, used_bytes, splat_count)
		SELECT $1, now(), now(), $2, $3, a.storage_bundle_bytes, 'active', 'active', 0, 0 FROM accounts a WHERE a.id = $4
		ON CONFLICT (integration_id, external_user_id) DO NOTHING`,
		ids.New(), k.IntegrationID, k.ExternalUserID, k.AccountID); err != nil {
		return err
	}
	if p.HasRetention {
		// Lock order of every scene writer: scene rows, then the customer, then the account.
		if err := lockCustomerScenes(ctx, tx, k.IntegrationID, k.ExternalUserID); err != nil {
			return err
		}
	}
	u, err := tx.ExternalUser.Query().Where(db.Customer(k.IntegrationID, k.ExternalUserID)).ForUpdate().Only(ctx)
	if err != nil {
		return err
	}
	before := u.Status
	if u, err = applyPatch(ctx, u, p); err != nil {
		return err
	}
	if u.Status != before {
		// Sessions scoped to this customer check the status at every use, from the caches.
		if err := notifyCustomer(ctx, tx, k.IntegrationID, k.ExternalUserID); err != nil {
			return err
		}
	}
	plan, err := s.applyLifecycle(ctx, tx, k, u, p, time.Now().UTC().Truncate(time.Microsecond))
	if err != nil {
		return err
	}
	out.Start, out.Cancel = plan.Start, plan.Cancel
	if out.Customer, err = s.counted(ctx, tx, k, u, plan.Delta); err != nil {
		return err
	}
	for _, e := range []struct {
		typ string
		ids []string
	}{{events.RetentionArchived, plan.Archive}, {events.RetentionRestored, plan.Restore}} {
		for _, id := range e.ids {
			ref := events.SceneRef{SplatID: id, ExternalUserID: k.ExternalUserID}
			if err := s.Events.Emit(ctx, tx, &out.Hooks, k.IntegrationID, e.typ, events.Value(ref)); err != nil {
				return err
			}
		}
	}
	return nil
}

// counted writes the lifecycle's counter change through quota (customer row, then account row,
// both locked already) and returns the customer as stored after it.
func (s *Store) counted(ctx context.Context, tx *ent.Tx, k Key, u *ent.ExternalUser, d quota.Delta) (*ent.ExternalUser, error) {
	if d == (quota.Delta{}) {
		return u, nil
	}
	if err := quota.Move(ctx, tx, u.ID, k.AccountID, d); err != nil {
		return nil, err
	}
	return tx.ExternalUser.Get(ctx, u.ID)
}

// lockCustomerScenes locks the scene rows of the customer eu of the integration before the
// customer row, keeping the lock order of every scene writer (scene rows, customer, account).
func lockCustomerScenes(ctx context.Context, tx *ent.Tx, integrationID, eu string) error {
	rows, err := tx.QueryContext(ctx, `SELECT s.id FROM scenes s JOIN external_users u ON u.id = s.owner_id
		WHERE u.integration_id = $1 AND u.external_user_id = $2 FOR UPDATE OF s`, integrationID, eu)
	if err != nil {
		return err
	}
	return rows.Close()
}

// applyLifecycle reads the customer's scenes (locked before the customer row), plans the
// lifecycle and writes the plan's scene changes with their change notice. The counters are
// the caller's (counted).
func (s *Store) applyLifecycle(ctx context.Context, tx *ent.Tx, k Key, u *ent.ExternalUser, p *Patch, now time.Time) (*LifecyclePlan, error) {
	if !p.HasRetention {
		return &LifecyclePlan{}, nil
	}
	rows, err := tx.Scene.Query().Where(scene.OwnerID(u.ID)).ForUpdate().
		Select(scene.FieldID, scene.FieldFileSizeBytes, scene.FieldHoldsSplatSlot, scene.FieldArchivedAt,
			scene.FieldArchiveProtected, scene.FieldUpdatedAt).All(ctx)
	if err != nil {
		return nil, err
	}
	scenes := make([]Scene, len(rows))
	for i, r := range rows {
		scenes[i] = Scene{ID: r.ID, Bytes: r.FileSizeBytes, Slot: r.HoldsSplatSlot, ArchivedAt: r.ArchivedAt,
			Protected: r.ArchiveProtected, UpdatedAt: r.UpdatedAt}
	}
	lockAccount := func() (quota.Meter, error) {
		a, err := tx.Account.Query().Where(account.ID(k.AccountID)).ForUpdate().Only(ctx)
		if err != nil {
			return quota.Meter{}, err
		}
		return quota.AccountMeter(a), nil
	}
	plan, err := PlanLifecycle(p, quota.CustomerMeter(u), scenes, now, lockAccount)
	if err != nil {
		return nil, err
	}
	if err := writeLifecycle(ctx, tx, plan, now); err != nil {
		return nil, err
	}
	return plan, db.NotifyScenesChanged(ctx, tx, k.IntegrationID, plan.Changed()...)
}

// writeLifecycle writes the plan's archiving, protection and restores to the scene rows.
func writeLifecycle(ctx context.Context, tx *ent.Tx, plan *LifecyclePlan, now time.Time) error {
	if len(plan.Archive) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE scenes SET archived_at = $2,
			archived_prior_visibility = visibility, archived_prior_allow_embed = allow_embed,
			visibility = 'private', allow_embed = false, featured = false,
			archive_protected = archive_protected OR coalesce(id = ANY($3::text[]), false)
			WHERE id = ANY($1::text[]) AND archived_at IS NULL`, plan.Archive, now, plan.ArchiveProtected); err != nil {
			return err
		}
	}
	if len(plan.Protect) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE scenes SET archive_protected = true WHERE id = ANY($1::text[])`,
			plan.Protect); err != nil {
			return err
		}
	}
	if len(plan.Restore) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE scenes SET archived_at = NULL,
			visibility = coalesce(archived_prior_visibility, 'private'),
			allow_embed = coalesce(archived_prior_allow_embed, false),
			archived_prior_visibility = NULL, archived_prior_allow_embed = NULL
			WHERE id = ANY($1::text[]) AND archived_at IS NOT NULL`, plan.Restore); err != nil {
			return err
		}
	}
	return nil
}
