package scene

import (
	"context"
	"net/http"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/account"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/internal/apperr"
)

// upgradeURL is where the plan-limit envelope points. For a per-customer cap the spec says the
// integrator ignores it and raises maxSplats instead.
const upgradeURL = "/account/billing"

// storageExceeded is the spec's 413 envelope; the figures are the customer's allocation
// (scope 'customer') or the account aggregate (scope 'account').
func storageExceeded(scope string, used, limit, requested int64) *apperr.Error {
	e := apperr.New(http.StatusRequestEntityTooLarge, "storage quota exceeded")
	return e.With("code", "STORAGE_QUOTA_EXCEEDED").With("scope", scope).With("usedBytes", used).
		With("limitBytes", limit).With("remainingBytes", max(0, limit-used)).With("requestedBytes", requested)
}

// splatCountExceeded is the spec's 403 plan_limit envelope for a scene cap.
func splatCountExceeded(limit, current int64) *apperr.Error {
	e := apperr.Forbidden("scene limit reached")
	return e.With("code", "plan_limit").With("dimension", "splatCount").With("limit", limit).
		With("current", current).With("upgradeUrl", upgradeURL)
}

// meter is the account storage meter after an operation (the spec's usage snapshot).
type meter struct {
	UsedBytes      int64   `json:"usedBytes"`
	LimitBytes     int64   `json:"limitBytes"`
	RemainingBytes int64   `json:"remainingBytes"`
	PercentUsed    float64 `json:"percentUsed"`
}

func meterOf(a *ent.Account) meter {
	used, limit := a.UsedBytes, a.StorageBundleBytes
	pct := 0.0
	if limit > 0 {
		pct = min(100, max(0, float64(used)/float64(limit)*100))
		pct = float64(int64(pct*100+0.5)) / 100
	}
	return meter{UsedBytes: used, LimitBytes: limit, RemainingBytes: max(0, limit-used), PercentUsed: pct}
}

// charge is what an operation adds to the counters: bytes of storage and whether it takes a
// scene slot. Negative values release.
type charge struct {
	bytes int64
	slot  bool
}

// reserve applies c to a customer and their account inside tx. It locks the customer row, then
// the account row — every writer takes them in this order, so concurrent commits serialize
// without deadlocks — checks every cap (customer limitBytes and maxSplats; the account bundle
// unless overage is on, and the account maxSplats), and writes the new counters. It returns the
// locked rows after the change.
func reserve(ctx context.Context, tx *ent.Tx, ownerID, accountID string, c charge) (*ent.ExternalUser, *ent.Account, error) {
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
		return nil, nil, apperr.Unauthorized("external user is inactive or deleted")
	}
	slots := int64(0)
	if c.slot {
		slots = 1
	}
	if c.bytes > 0 && u.UsedBytes+c.bytes > u.LimitBytes {
		return nil, nil, storageExceeded("customer", u.UsedBytes, u.LimitBytes, c.bytes)
	}
	if slots > 0 && u.MaxSplats != nil && u.SplatCount+1 > *u.MaxSplats {
		return nil, nil, splatCountExceeded(*u.MaxSplats, u.SplatCount)
	}
	if c.bytes > 0 && !a.Overage && a.UsedBytes+c.bytes > a.StorageBundleBytes {
		return nil, nil, storageExceeded("account", a.UsedBytes, a.StorageBundleBytes, c.bytes)
	}
	if slots > 0 && a.MaxSplats != nil && a.SplatCount+1 > *a.MaxSplats {
		return nil, nil, splatCountExceeded(*a.MaxSplats, a.SplatCount)
	}
	if u, err = u.Update().AddUsedBytes(c.bytes).AddSplatCount(slots).Save(ctx); err != nil {
		return nil, nil, err
	}
	if a, err = a.Update().AddUsedBytes(c.bytes).AddSplatCount(slots).Save(ctx); err != nil {
		return nil, nil, err
	}
	return u, a, nil
}

// release gives back what a scene held; it never fails a cap.
func release(ctx context.Context, tx *ent.Tx, ownerID, accountID string, bytes int64, slot bool) error {
	slots := int64(0)
	if slot {
		slots = -1
	}
	// Same lock order as reserve.
	if err := tx.ExternalUser.UpdateOneID(ownerID).AddUsedBytes(-bytes).AddSplatCount(slots).Exec(ctx); err != nil {
		return err
	}
	return tx.Account.UpdateOneID(accountID).AddUsedBytes(-bytes).AddSplatCount(slots).Exec(ctx)
}
