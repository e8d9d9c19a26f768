package quota

import (
	"context"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
)

// Meter is one holder's counters and caps as plain values: a customer's (LimitBytes is its
// limitBytes) or an account's (LimitBytes is its storage bundle). The cap rules below run on
// meters, so they are tested without Postgres and shared by every writer of the counters.
type Meter struct {
	UsedBytes, Splats, LimitBytes int64
	// MaxSplats is the scene cap; nil is unlimited.
	MaxSplats *int64
	// Overage lifts the byte cap (an enterprise account billed for what it uses beyond its
	// bundle); a customer's byte cap is never lifted.
	Overage bool
}

// CustomerMeter is the meter of a customer row.
func CustomerMeter(u *ent.ExternalUser) Meter {
	return Meter{UsedBytes: u.UsedBytes, Splats: u.SplatCount, LimitBytes: u.LimitBytes, MaxSplats: u.MaxSplats}
}

// AccountMeter is the meter of an account row.
func AccountMeter(a *ent.Account) Meter {
	return Meter{UsedBytes: a.UsedBytes, Splats: a.SplatCount, LimitBytes: a.StorageBundleBytes, MaxSplats: a.MaxSplats,
		Overage: a.Overage}
}

// slots is the scene count a charge takes.
func (c Charge) slots() int64 {
	if c.Slot {
		return 1
	}
	return 0
}

// Add is the meter after c is charged to it (a negative Bytes gives bytes back).
func (m Meter) Add(c Charge) Meter {
	m.UsedBytes += c.Bytes
	m.Splats += c.slots()
	return m
}

// Shift is the meter after the signed change d.
func (m Meter) Shift(d Delta) Meter {
	m.UsedBytes += d.Bytes
	m.Splats += d.Splats
	return m
}

// Within says the meter's counters are inside its caps.
func (m Meter) Within() bool {
	return (m.Overage || m.UsedBytes <= m.LimitBytes) && (m.MaxSplats == nil || m.Splats <= *m.MaxSplats)
}

// refusal is the envelope of the first cap of m that charging c breaks, or nil. Only what c
// adds is checked: a charge without bytes is never refused for storage, nor one without a slot
// for the scene count, even when the holder is over that cap already (a cap lowered later).
func (m Meter) refusal(scope string, c Charge) *apperr.Error {
	if c.Bytes > 0 && !m.Overage && m.UsedBytes+c.Bytes > m.LimitBytes {
		return StorageExceeded(scope, m.UsedBytes, m.LimitBytes, c.Bytes)
	}
	if c.Slot && m.MaxSplats != nil && m.Splats+1 > *m.MaxSplats {
		return SplatCountExceeded(scope, *m.MaxSplats, m.Splats)
	}
	return nil
}

// Check is the rule of a new charge (Reserve): the customer's caps first, then the account's;
// the first cap broken answers with the spec's 413 or 403 envelope, nil when c fits.
func Check(customer, account Meter, c Charge) error {
	if e := customer.refusal("customer", c); e != nil {
		return e
	}
	if e := account.refusal("account", c); e != nil {
		return e
	}
	return nil
}

// Fits is the rule of taking back what was held before (a restore from the retained archive):
// after c both meters are within every cap. Stricter than Check on purpose: a holder already
// over a cap gets nothing back, not even a scene that adds nothing to that counter.
func Fits(customer, account Meter, c Charge) bool {
	return customer.Add(c).Within() && account.Add(c).Within()
}

// Delta is a signed change of both counters: bytes and scene slots.
type Delta struct {
	Bytes, Splats int64
}

// Add is the change d and the charge c together.
func (d Delta) Add(c Charge) Delta {
	return Delta{Bytes: d.Bytes + c.Bytes, Splats: d.Splats + c.slots()}
}

// Move adds d to the customer's counters and then to the account's (the lock order of every
// writer), without checking a cap: the caller has applied Fits or gives back what it held.
func Move(ctx context.Context, tx *ent.Tx, ownerID, accountID string, d Delta) error {
	if err := tx.ExternalUser.UpdateOneID(ownerID).AddUsedBytes(d.Bytes).AddSplatCount(d.Splats).Exec(ctx); err != nil {
		return err
	}
	return tx.Account.UpdateOneID(accountID).AddUsedBytes(d.Bytes).AddSplatCount(d.Splats).Exec(ctx)
}

// Clear sets a customer's counters to zero and gives held back to the account: what a deleted
// customer held, counted from their scenes and reservations rather than read from the counter.
func Clear(ctx context.Context, tx *ent.Tx, ownerID, accountID string, held Delta) error {
	if err := tx.ExternalUser.UpdateOneID(ownerID).SetUsedBytes(0).SetSplatCount(0).Exec(ctx); err != nil {
		return err
	}
	if held.Bytes == 0 && held.Splats == 0 {
		return nil
	}
	return tx.Account.UpdateOneID(accountID).AddUsedBytes(-held.Bytes).AddSplatCount(-held.Splats).Exec(ctx)
}
