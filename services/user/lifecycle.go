package user

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/account"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/workflows"
)

// The billing lifecycle of PUT /api/v1/external-user (spec: "Customer status and billing
// state", "Retained archive"). It runs inside the PUT transaction whenever the body carries a
// retention field (billingState, limitBytes, maxSplats, keepSplatIds or protectedSplatIds); a
// PUT with identity fields only never touches the scenes.
//
// Rules (README, "Billing lifecycle and retained archive"):
//
//   - Keepers. With keepSplatIds, the live scenes kept are exactly those ids: each must be a live
//     (non-archived) scene of this customer, and together they must fit the final caps — their
//     slot-holding count ≤ maxSplats and their bytes ≤ limitBytes — else 400 naming each problem
//     and nothing changes. Without keepSplatIds, every live scene is kept while the live usage
//     fits the caps; when it does not, keepers are chosen most recently updated first (then id),
//     first fit: a scene that does not fit is skipped and later, smaller ones may still be kept.
//   - Every live scene outside the keepers is archived: archived_at = now, its visibility and
//     allowEmbed saved and set to private / false, featured cleared, and its bytes and scene slot
//     released from the customer and the account. updated_at is left alone (archiving is not an
//     edit), so "most recently updated" keeps meaning the owner's last change.
//   - protectedSplatIds (up to 1 000 ids, each a scene of this customer, live or archived) marks
//     those scenes archive_protected. Protection is sticky: it stays on the scene (it is never
//     cleared by a later PUT), a protected scene is archived like any other overflow but gets no
//     retention timer, and protecting an archived scene cancels its timer.
//   - Restore. On billingState 'active' and on any PUT that supplies limitBytes or maxSplats,
//     archived scenes are restored while they fit the customer caps, the account bundle (unless
//     the account has overage) and the account maxSplats: protected first, then most recently
//     archived, then id; first fit as above. A restore puts back the prior visibility and
//     allowEmbed and charges bytes and slot again. With keepSplatIds there is no restore: the
//     live set after the PUT is exactly the keepers. Scenes archived by this same PUT are not
//     restored by it.
//   - After the commit, each newly archived unprotected scene gets its SceneRetention workflow
//     (removal 44 days later, keyed by scene id and the archived_at stored), and each restored or
//     newly protected scene has its timer canceled. Both are best effort; the workflow re-checks
//     the scene before removing anything, so a lost cancel is harmless.

// retentionCallTimeout bounds the post-commit starts and cancels of retention workflows.
const retentionCallTimeout = 30 * time.Second

// retentionCallers is how many starts or cancels run at once after a large archive.
const retentionCallers = 16

// lifecycleScene is what the lifecycle reads of one scene.
type lifecycleScene struct {
	id        string
	bytes     int64
	slot      bool
	archived  *time.Time
	protected bool
	updated   time.Time
}

// retentionTimer names one archiving of one scene: the key of its retention workflow.
type retentionTimer struct {
	sceneID    string
	archivedAt time.Time
}

// lifecycleEffects is what the lifecycle transaction did that must be followed by Temporal
// calls once it has committed.
type lifecycleEffects struct {
	start  []retentionTimer // newly archived, unprotected
	cancel []retentionTimer // restored or newly protected
	// archived and restored are the scenes this PUT archived and restored (their webhook events).
	archived, restored []string
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

// applyLifecycle applies the retention rules to the customer u, whose row is locked and already
// carries the patched caps; the customer's scene rows were locked before it. It returns the
// customer after the counter changes and the post-commit work.
func applyLifecycle(ctx context.Context, tx *ent.Tx, caller *httpx.Caller, u *ent.ExternalUser, p *customerPatch, now time.Time) (*ent.ExternalUser, *lifecycleEffects, error) {
	fx := &lifecycleEffects{}
	if !p.hasRetention {
		return u, fx, nil
	}
	rows, err := tx.Scene.Query().Where(scene.OwnerID(u.ID)).ForUpdate().
		Select(scene.FieldID, scene.FieldFileSizeBytes, scene.FieldHoldsSplatSlot, scene.FieldArchivedAt,
			scene.FieldArchiveProtected, scene.FieldUpdatedAt).All(ctx)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]*lifecycleScene, len(rows))
	var live, archived []*lifecycleScene
	for _, r := range rows {
		sc := &lifecycleScene{id: r.ID, bytes: r.FileSizeBytes, slot: r.HoldsSplatSlot, archived: r.ArchivedAt,
			protected: r.ArchiveProtected, updated: r.UpdatedAt}
		byID[sc.id] = sc
		if sc.archived == nil {
			live = append(live, sc)
		} else {
			archived = append(archived, sc)
		}
	}

	// Validate the named ids against this customer's scenes, and the keepers against the caps.
	var issues []string
	protect := map[string]bool{}
	for _, id := range p.protectedIDs {
		if byID[id] == nil {
			issues = append(issues, fmt.Sprintf("protectedSplatIds: %s is not a scene of this external user", id))
		}
		protect[id] = true
	}
	var keepers map[string]bool
	if p.keepSceneIDs != nil {
		keepers = map[string]bool{}
		var bytes, slots int64
		for _, id := range p.keepSceneIDs {
			sc := byID[id]
			if sc == nil || sc.archived != nil {
				issues = append(issues, fmt.Sprintf("keepSplatIds: %s is not a live scene of this external user", id))
				continue
			}
			if keepers[id] {
				continue
			}
			keepers[id] = true
			bytes += sc.bytes
			if sc.slot {
				slots++
			}
		}
		if u.MaxSplats != nil && slots > *u.MaxSplats {
			issues = append(issues, fmt.Sprintf("keepSplatIds: %d scenes to keep exceed maxSplats %d", slots, *u.MaxSplats))
		}
		if bytes > u.LimitBytes {
			issues = append(issues, fmt.Sprintf("keepSplatIds: %d bytes to keep exceed limitBytes %d", bytes, u.LimitBytes))
		}
	}
	if len(issues) > 0 {
		return nil, nil, apperr.Invalid("validation failed", issues...)
	}
	if keepers == nil {
		keepers = autoKeepers(live, u.LimitBytes, u.MaxSplats)
	}

	// Archive the live scenes outside the keepers.
	var archiveIDs, protectedArchiveIDs, changed []string
	var releaseBytes, releaseSlots int64
	for _, sc := range live {
		if keepers[sc.id] {
			continue
		}
		archiveIDs = append(archiveIDs, sc.id)
		releaseBytes += sc.bytes
		if sc.slot {
			releaseSlots++
		}
		if sc.protected || protect[sc.id] {
			protectedArchiveIDs = append(protectedArchiveIDs, sc.id)
		} else {
			fx.start = append(fx.start, retentionTimer{sceneID: sc.id, archivedAt: now})
		}
	}
	if len(archiveIDs) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE scenes SET archived_at = $2,
			archived_prior_visibility = visibility, archived_prior_allow_embed = allow_embed,
			visibility = 'private', allow_embed = false, featured = false,
			archive_protected = archive_protected OR coalesce(id = ANY($3::text[]), false)
			WHERE id = ANY($1::text[]) AND archived_at IS NULL`, archiveIDs, now, protectedArchiveIDs); err != nil {
			return nil, nil, err
		}
		changed = append(changed, archiveIDs...)
		fx.archived = archiveIDs
	}

	// Protect the other named scenes: live ones keep the mark for a later archive, archived ones
	// lose their timer.
	var newlyProtected []string
	for _, id := range p.protectedIDs {
		sc := byID[id]
		if sc.protected || (sc.archived == nil && !keepers[id]) {
			continue // already protected, or archived above with the mark
		}
		sc.protected = true
		newlyProtected = append(newlyProtected, id)
		if sc.archived != nil {
			fx.cancel = append(fx.cancel, retentionTimer{sceneID: id, archivedAt: *sc.archived})
		}
	}
	if len(newlyProtected) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE scenes SET archive_protected = true WHERE id = ANY($1::text[])`,
			newlyProtected); err != nil {
			return nil, nil, err
		}
		changed = append(changed, newlyProtected...)
	}

	// Restore what fits, from the scenes archived before this PUT.
	restoreWanted := p.keepSceneIDs == nil && len(archived) > 0 &&
		((p.billingState != nil && *p.billingState == string(externaluser.BillingStateActive)) ||
			p.limitBytes != nil || p.maxSplats != nil || p.clearMax)
	var a *ent.Account
	if restoreWanted || releaseBytes != 0 || releaseSlots != 0 {
		if a, err = tx.Account.Query().Where(account.ID(caller.AccountID)).ForUpdate().Only(ctx); err != nil {
			return nil, nil, err
		}
	}
	var restoreIDs []string
	var chargeBytes, chargeSlots int64
	if restoreWanted {
		sortForRestore(archived)
		custBytes, custSlots := u.UsedBytes-releaseBytes, u.SplatCount-releaseSlots
		acctBytes, acctSlots := a.UsedBytes-releaseBytes, a.SplatCount-releaseSlots
		for _, sc := range archived {
			slot := int64(0)
			if sc.slot {
				slot = 1
			}
			if custBytes+sc.bytes > u.LimitBytes || (u.MaxSplats != nil && custSlots+slot > *u.MaxSplats) ||
				(!a.Overage && acctBytes+sc.bytes > a.StorageBundleBytes) ||
				(a.MaxSplats != nil && acctSlots+slot > *a.MaxSplats) {
				continue
			}
			custBytes, custSlots = custBytes+sc.bytes, custSlots+slot
			acctBytes, acctSlots = acctBytes+sc.bytes, acctSlots+slot
			chargeBytes, chargeSlots = chargeBytes+sc.bytes, chargeSlots+slot
			restoreIDs = append(restoreIDs, sc.id)
			if !sc.protected {
				fx.cancel = append(fx.cancel, retentionTimer{sceneID: sc.id, archivedAt: *sc.archived})
			}
		}
	}
	if len(restoreIDs) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE scenes SET archived_at = NULL,
			visibility = coalesce(archived_prior_visibility, 'private'),
			allow_embed = coalesce(archived_prior_allow_embed, false),
			archived_prior_visibility = NULL, archived_prior_allow_embed = NULL
			WHERE id = ANY($1::text[]) AND archived_at IS NOT NULL`, restoreIDs); err != nil {
			return nil, nil, err
		}
		changed = append(changed, restoreIDs...)
		fx.restored = restoreIDs
	}

	// Counters: customer row, then account row (both locked already).
	dBytes, dSlots := chargeBytes-releaseBytes, chargeSlots-releaseSlots
	if dBytes != 0 || dSlots != 0 {
		if u, err = u.Update().AddUsedBytes(dBytes).AddSplatCount(dSlots).Save(ctx); err != nil {
			return nil, nil, err
		}
		if err := a.Update().AddUsedBytes(dBytes).AddSplatCount(dSlots).Exec(ctx); err != nil {
			return nil, nil, err
		}
	}
	if err := db.NotifyScenesChanged(ctx, tx, caller.IntegrationID, changed...); err != nil {
		return nil, nil, err
	}
	return u, fx, nil
}

// autoKeepers chooses the live scenes kept when keepSplatIds is omitted: all of them when they
// fit the caps, else most recently updated first (then id), first fit.
func autoKeepers(live []*lifecycleScene, limitBytes int64, maxSplats *int64) map[string]bool {
	keep := make(map[string]bool, len(live))
	var bytes, slots int64
	for _, sc := range live {
		bytes += sc.bytes
		if sc.slot {
			slots++
		}
	}
	if bytes <= limitBytes && (maxSplats == nil || slots <= *maxSplats) {
		for _, sc := range live {
			keep[sc.id] = true
		}
		return keep
	}
	order := append([]*lifecycleScene(nil), live...)
	sort.Slice(order, func(i, j int) bool {
		if !order[i].updated.Equal(order[j].updated) {
			return order[i].updated.After(order[j].updated)
		}
		return order[i].id < order[j].id
	})
	bytes, slots = 0, 0
	for _, sc := range order {
		slot := int64(0)
		if sc.slot {
			slot = 1
		}
		if bytes+sc.bytes > limitBytes || (maxSplats != nil && slots+slot > *maxSplats) {
			continue
		}
		bytes, slots = bytes+sc.bytes, slots+slot
		keep[sc.id] = true
	}
	return keep
}

// sortForRestore orders archived scenes for restoring: protected first, then most recently
// archived, then id.
func sortForRestore(scenes []*lifecycleScene) {
	sort.Slice(scenes, func(i, j int) bool {
		a, b := scenes[i], scenes[j]
		if a.protected != b.protected {
			return a.protected
		}
		if !a.archived.Equal(*b.archived) {
			return a.archived.After(*b.archived)
		}
		return a.id < b.id
	})
}

// applyRetentionTimers starts and cancels the retention workflows after the lifecycle
// transaction committed. It is best effort: failures are logged, and a timer whose cancel was
// lost finds the scene restored or protected and removes nothing.
func (s *Service) applyRetentionTimers(ctx context.Context, caller *httpx.Caller, u *ent.ExternalUser, fx *lifecycleEffects) {
	if fx == nil || len(fx.start)+len(fx.cancel) == 0 {
		return
	}
	if s.temporal.Client == nil {
		s.log.Warn("no Temporal client; retention timers not changed", "customer", u.ID,
			"starts", len(fx.start), "cancels", len(fx.cancel))
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retentionCallTimeout)
	defer cancel()
	sem := make(chan struct{}, retentionCallers)
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f()
		}()
	}
	for _, t := range fx.cancel {
		run(func() {
			if err := workflows.CancelSceneRetention(ctx, s.temporal.Client, t.sceneID, t.archivedAt); err != nil {
				s.log.Warn("canceling a scene's retention timer", "scene", t.sceneID, "error", err)
			}
		})
	}
	for _, t := range fx.start {
		run(func() {
			in := workflows.RetentionInput{SceneID: t.sceneID, IntegrationID: caller.IntegrationID,
				OwnerID: u.ID, ExternalUserID: u.ExternalUserID, ArchivedAt: t.archivedAt}
			if err := workflows.StartSceneRetention(ctx, s.temporal.Client, s.temporal.TaskQueue, in); err != nil {
				s.log.Warn("starting a scene's retention timer", "scene", t.sceneID, "error", err)
			}
		})
	}
	wg.Wait()
}
