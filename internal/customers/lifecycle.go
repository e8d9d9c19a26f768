package customers

import (
	"fmt"
	"sort"
	"time"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/quota"
)

// The billing lifecycle of PUT /api/v1/external-user (spec: "Customer status and billing
// state", "Retained archive") as plain rules over plain values: Plan decides, the store
// (lifecycle_store.go) reads the rows and writes what Plan decided. It runs whenever the body
// carries a retention field (billingState, limitBytes, maxSplats, keepSplatIds or
// protectedSplatIds); a PUT with identity fields only never touches the scenes.
//
// Rules (docs/guides/integrating.md, "Quotas, billing states and the retained archive"):
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
//     archived scenes are restored while they fit (quota.Fits) the customer caps, the account
//     bundle (unless the account has overage) and the account maxSplats: protected first, then
//     most recently archived, then id; first fit as above. A restore puts back the prior
//     visibility and allowEmbed and charges bytes and slot again. With keepSplatIds there is no
//     restore: the live set after the PUT is exactly the keepers. Scenes archived by this same
//     PUT are not restored by it.
//   - After the commit, each newly archived unprotected scene gets its SceneRetention workflow
//     (14 days of grace, then 30 of dormancy, keyed by scene id and the archived_at stored), and
//     each restored or newly protected scene has its timer canceled. Both are best effort; the
//     workflow re-checks the scene before removing anything, so a lost cancel is harmless.

// Scene is what the lifecycle reads of one scene of the customer.
type Scene struct {
	ID    string
	Bytes int64
	// Slot says the scene holds a scene slot (an unpublished clone does not).
	Slot bool
	// ArchivedAt is nil for a live scene.
	ArchivedAt *time.Time
	Protected  bool
	UpdatedAt  time.Time
}

// charge is what the scene holds of the counters while live.
func (sc *Scene) charge() quota.Charge { return quota.Charge{Bytes: sc.Bytes, Slot: sc.Slot} }

// Timer names one archiving of one scene: the key of its retention workflow.
type Timer struct {
	SceneID    string
	ArchivedAt time.Time
}

// LifecyclePlan is what one PUT does to the customer's scenes and counters.
type LifecyclePlan struct {
	// Archive are the live scenes archived now; ArchiveProtected those of them protected.
	Archive, ArchiveProtected []string
	// Protect are the other scenes that gain the protection mark.
	Protect []string
	// Restore are the archived scenes restored.
	Restore []string
	// Delta is the change of the customer's and the account's counters.
	Delta quota.Delta
	// Start are the retention timers to start after the commit, Cancel those to cancel.
	Start, Cancel []Timer
}

// Changed are the scenes whose rows the plan changes (their change notice).
func (p *LifecyclePlan) Changed() []string {
	return append(append(append([]string(nil), p.Archive...), p.Protect...), p.Restore...)
}

// Restores says the patch asks for a restore of what fits: billingState 'active' or new caps,
// without keepSplatIds.
func (p *Patch) Restores() bool {
	return p.KeepSceneIDs == nil && ((p.BillingState != nil && *p.BillingState == BillingActive) ||
		p.LimitBytes != nil || p.MaxSplats != nil || p.ClearMax)
}

// PlanLifecycle applies the rules to the customer's scenes. customer is the customer's meter
// with the patched caps; account reads (and, in the store, locks) the account's meter, and is
// called only when the plan changes the counters or may restore, as before every account lock.
func PlanLifecycle(p *Patch, customer quota.Meter, scenes []Scene, now time.Time, account func() (quota.Meter, error)) (*LifecyclePlan, error) {
	plan := &LifecyclePlan{}
	if !p.HasRetention {
		return plan, nil
	}
	byID := make(map[string]*Scene, len(scenes))
	var live, archived []*Scene
	for i := range scenes {
		sc := &scenes[i]
		byID[sc.ID] = sc
		if sc.ArchivedAt == nil {
			live = append(live, sc)
		} else {
			archived = append(archived, sc)
		}
	}
	keepers, protect, err := checkNamed(p, customer, byID)
	if err != nil {
		return nil, err
	}
	if keepers == nil {
		keepers = autoKeepers(live, customer.LimitBytes, customer.MaxSplats)
	}

	// Archive the live scenes outside the keepers.
	var released quota.Delta
	for _, sc := range live {
		if keepers[sc.ID] {
			continue
		}
		plan.Archive = append(plan.Archive, sc.ID)
		released = released.Add(sc.charge())
		if sc.Protected || protect[sc.ID] {
			plan.ArchiveProtected = append(plan.ArchiveProtected, sc.ID)
		} else {
			plan.Start = append(plan.Start, Timer{SceneID: sc.ID, ArchivedAt: now})
		}
	}
	// Protect the other named scenes: live ones keep the mark for a later archive, archived ones
	// lose their timer.
	for _, id := range p.ProtectedIDs {
		sc := byID[id]
		if sc.Protected || (sc.ArchivedAt == nil && !keepers[id]) {
			continue // already protected, or archived above with the mark
		}
		sc.Protected = true
		plan.Protect = append(plan.Protect, id)
		if sc.ArchivedAt != nil {
			plan.Cancel = append(plan.Cancel, Timer{SceneID: id, ArchivedAt: *sc.ArchivedAt})
		}
	}
	plan.Delta = quota.Delta{Bytes: -released.Bytes, Splats: -released.Splats}
	restore := p.Restores() && len(archived) > 0
	if !restore && plan.Delta == (quota.Delta{}) {
		return plan, nil
	}
	acct, err := account()
	if err != nil {
		return nil, err
	}
	if restore {
		planRestore(plan, archived, customer, acct)
	}
	return plan, nil
}

// checkNamed validates the named ids against the customer's scenes and the keepers against the
// caps, naming every problem. It returns the keepers (nil without keepSplatIds) and the ids to
// protect.
func checkNamed(p *Patch, customer quota.Meter, byID map[string]*Scene) (keepers, protect map[string]bool, err error) {
	var issues []string
	protect = map[string]bool{}
	for _, id := range p.ProtectedIDs {
		if byID[id] == nil {
			issues = append(issues, fmt.Sprintf("protectedSplatIds: %s is not a scene of this external user", id))
		}
		protect[id] = true
	}
	if p.KeepSceneIDs != nil {
		keepers = map[string]bool{}
		var kept quota.Meter
		for _, id := range p.KeepSceneIDs {
			sc := byID[id]
			if sc == nil || sc.ArchivedAt != nil {
				issues = append(issues, fmt.Sprintf("keepSplatIds: %s is not a live scene of this external user", id))
				continue
			}
			if !keepers[id] {
				keepers[id] = true
				kept = kept.Add(sc.charge())
			}
		}
		if customer.MaxSplats != nil && kept.Splats > *customer.MaxSplats {
			issues = append(issues, fmt.Sprintf("keepSplatIds: %d scenes to keep exceed maxSplats %d", kept.Splats, *customer.MaxSplats))
		}
		if kept.UsedBytes > customer.LimitBytes {
			issues = append(issues, fmt.Sprintf("keepSplatIds: %d bytes to keep exceed limitBytes %d", kept.UsedBytes, customer.LimitBytes))
		}
	}
	if len(issues) > 0 {
		return nil, nil, apperr.Invalid("validation failed", issues...)
	}
	return keepers, protect, nil
}

// planRestore restores, from the scenes archived before this PUT, what fits after the plan's
// archiving: protected first, then most recently archived, then id, first fit.
func planRestore(plan *LifecyclePlan, archived []*Scene, customer, account quota.Meter) {
	customer, account = customer.Shift(plan.Delta), account.Shift(plan.Delta)
	sortForRestore(archived)
	for _, sc := range archived {
		c := sc.charge()
		if !quota.Fits(customer, account, c) {
			continue
		}
		customer, account = customer.Add(c), account.Add(c)
		plan.Delta = plan.Delta.Add(c)
		plan.Restore = append(plan.Restore, sc.ID)
		if !sc.Protected {
			plan.Cancel = append(plan.Cancel, Timer{SceneID: sc.ID, ArchivedAt: *sc.ArchivedAt})
		}
	}
}

// autoKeepers chooses the live scenes kept when keepSplatIds is omitted: all of them when they
// fit the caps, else most recently updated first (then id), first fit.
func autoKeepers(live []*Scene, limitBytes int64, maxSplats *int64) map[string]bool {
	keep := make(map[string]bool, len(live))
	caps := quota.Meter{LimitBytes: limitBytes, MaxSplats: maxSplats}
	all := caps
	for _, sc := range live {
		all = all.Add(sc.charge())
	}
	if all.Within() {
		for _, sc := range live {
			keep[sc.ID] = true
		}
		return keep
	}
	order := append([]*Scene(nil), live...)
	sort.Slice(order, func(i, j int) bool {
		if !order[i].UpdatedAt.Equal(order[j].UpdatedAt) {
			return order[i].UpdatedAt.After(order[j].UpdatedAt)
		}
		return order[i].ID < order[j].ID
	})
	kept := caps
	for _, sc := range order {
		if next := kept.Add(sc.charge()); next.Within() {
			kept = next
			keep[sc.ID] = true
		}
	}
	return keep
}

// sortForRestore orders archived scenes for restoring: protected first, then most recently
// archived, then id.
func sortForRestore(scenes []*Scene) {
	sort.Slice(scenes, func(i, j int) bool {
		a, b := scenes[i], scenes[j]
		if a.Protected != b.Protected {
			return a.Protected
		}
		if !a.ArchivedAt.Equal(*b.ArchivedAt) {
			return a.ArchivedAt.After(*b.ArchivedAt)
		}
		return a.ID < b.ID
	})
}
