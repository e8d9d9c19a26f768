// Package quota is the one implementation of the storage and scene-count counters: the usage
// snapshot the interface shows, the reservation that checks every cap under row locks, its
// release, and the spec's 413 and 403 plan_limit envelopes. The scene service (commits, first
// publish, deletes) and the clone activities share it, so a clone is charged exactly like a
// commit.
package quota

import (
	"context"
	"math"
	"net/http"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/account"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/internal/apperr"
)

// UpgradeURL is where the plan-limit envelope points. For a per-customer cap the spec says the
// integrator ignores it and raises maxSplats instead.
const UpgradeURL = "/account/billing"

// Snapshot is the interface's usage snapshot: { usedBytes, limitBytes, remainingBytes,
// percentUsed }.
type Snapshot struct {
	UsedBytes      int64   `json:"usedBytes"`
	LimitBytes     int64   `json:"limitBytes"`
	RemainingBytes int64   `json:"remainingBytes"`
	PercentUsed    float64 `json:"percentUsed"`
}

// SnapshotOf computes remainingBytes = max(0, limit - used) and percentUsed in 0-100
// (contract.md item 7), 0 when the limit is 0.
func SnapshotOf(used, limit int64) Snapshot {
	return Snapshot{UsedBytes: used, LimitBytes: limit, RemainingBytes: max(0, limit-used), PercentUsed: PercentUsed(used, limit)}
}

// AccountSnapshot is the account storage meter (the snapshot in create-scene and clone
// responses).
func AccountSnapshot(a *ent.Account) Snapshot { return SnapshotOf(a.UsedBytes, a.StorageBundleBytes) }

// PercentUsed is used/limit as a percentage clamped to 0-100 and rounded to two decimals.
func PercentUsed(used, limit int64) float64 {
	if limit <= 0 {
		return 0
	}
	p := float64(used) / float64(limit) * 100
	p = math.Max(0, math.Min(100, p))
	return math.Round(p*100) / 100
}

// StorageExceeded is the spec's 413 envelope; the figures are the customer's allocation (scope
// 'customer') or the account aggregate (scope 'account').
func StorageExceeded(scope string, used, limit, requested int64) *apperr.Error {
	e := apperr.New(http.StatusRequestEntityTooLarge, "storage quota exceeded")
	return e.With("code", "STORAGE_QUOTA_EXCEEDED").With("scope", scope).With("usedBytes", used).
		With("limitBytes", limit).With("remainingBytes", max(0, limit-used)).With("requestedBytes", requested)
}

// SplatCountExceeded is the spec's 403 plan_limit envelope for a scene cap. scope says which cap
// ('customer' maxSplats or 'account' maxSplats), as the 413 envelope does: the editor embed maps
// it to its limitReached event, whose scope tells the host whom to unblock.
func SplatCountExceeded(scope string, limit, current int64) *apperr.Error {
	e := apperr.Forbidden("scene limit reached")
	return e.With("code", "plan_limit").With("dimension", "splatCount").With("scope", scope).With("limit", limit).
		With("current", current).With("upgradeUrl", UpgradeURL)
}

// Charge is what an operation adds to the counters: bytes of storage and whether it takes a
// scene slot.
type Charge struct {
	Bytes int64
	Slot  bool
}

// Reserve applies c to a customer and their account inside tx. It locks the customer row, then
// the account row — every writer takes them in this order, so concurrent commits serialize
// without deadlocks — checks every cap (customer limitBytes and maxSplats; the account bundle
// unless overage is on, and the account maxSplats), and writes the new counters. It returns the
// locked rows after the change.
func Reserve(ctx context.Context, tx *ent.Tx, ownerID, accountID string, c Charge) (*ent.ExternalUser, *ent.Account, error) {
	u, err := tx.ExternalUser.Query().Where(externaluser.ID(ownerID)).ForUpdate().Only(ctx)
	if err != nil {
		return nil, nil, err
	}
	a, err := tx.Account.Query().Where(account.ID(accountID)).ForUpdate().Only(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Checked again under the lock: a customer deleted or deactivated while this request was
	// verifying its uploads must not gain a scene.
	if u.Status != externaluser.StatusActive {
		return nil, nil, apperr.CustomerInactive(http.StatusUnauthorized, "external user is inactive or deleted")
	}
	if err := Check(CustomerMeter(u), AccountMeter(a), c); err != nil {
		return nil, nil, err
	}
	if u, err = u.Update().AddUsedBytes(c.Bytes).AddSplatCount(c.slots()).Save(ctx); err != nil {
		return nil, nil, err
	}
	if a, err = a.Update().AddUsedBytes(c.Bytes).AddSplatCount(c.slots()).Save(ctx); err != nil {
		return nil, nil, err
	}
	return u, a, nil
}

// Release gives back what a scene (or a clone's reservation) held; it never fails a cap.
func Release(ctx context.Context, tx *ent.Tx, ownerID, accountID string, c Charge) error {
	// Same lock order as Reserve.
	return Move(ctx, tx, ownerID, accountID, Delta{Bytes: -c.Bytes, Splats: -c.slots()})
}
