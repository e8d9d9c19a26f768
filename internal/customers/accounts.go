package customers

import (
	"context"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/account"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/ids"
)

// Plans are the account plans, cheapest first.
var Plans = []string{"free", "pro", "enterprise"}

// Account is an account's settings as the operator edits them (the counters are quota's).
type Account struct {
	Name               string
	Plan               string
	StorageBundleBytes int64
	// MaxSplats is the account's scene cap; nil is unlimited.
	MaxSplats *int64
	// Overage bills storage beyond the bundle instead of refusing it (enterprise only).
	Overage bool
}

// OverageProblem is the rule tying overage to the plan: only the enterprise plan supports it.
// It returns the issue to name, or "" when the pair is allowed.
func OverageProblem(plan string, overage bool) string {
	if overage && plan != "enterprise" {
		return "overage: only the enterprise plan supports overage"
	}
	return ""
}

// AccountPatch is a validated PATCH /admin/v1/accounts/:id body: nil is an omitted field.
type AccountPatch struct {
	Name, Plan         *string
	StorageBundleBytes *int64
	MaxSplats          *int64
	// ClearMax is an explicit null maxSplats (no cap).
	ClearMax bool
	Overage  *bool
}

// Apply writes the supplied fields into a and checks overage against the plan the account has
// after the change (turning overage on for a pro account fails, and so does moving an
// enterprise account with overage to pro without turning it off).
func (p *AccountPatch) Apply(a *Account) error {
	if p.Name != nil {
		a.Name = *p.Name
	}
	if p.Plan != nil {
		a.Plan = *p.Plan
	}
	if p.StorageBundleBytes != nil {
		a.StorageBundleBytes = *p.StorageBundleBytes
	}
	if p.MaxSplats != nil {
		a.MaxSplats = p.MaxSplats
	} else if p.ClearMax {
		a.MaxSplats = nil
	}
	if p.Overage != nil {
		a.Overage = *p.Overage
	}
	if problem := OverageProblem(a.Plan, a.Overage); problem != "" {
		return apperr.Invalid("validation failed", problem)
	}
	return nil
}

// accountOf is the settings of an account row.
func accountOf(a *ent.Account) Account {
	return Account{Name: a.Name, Plan: string(a.Plan), StorageBundleBytes: a.StorageBundleBytes, MaxSplats: a.MaxSplats,
		Overage: a.Overage}
}

// CreateAccount stores a new account with the settings a.
func (s *Store) CreateAccount(ctx context.Context, a Account) (*ent.Account, error) {
	out, err := s.DB.Ent.Account.Create().SetName(a.Name).SetPlan(account.Plan(a.Plan)).
		SetStorageBundleBytes(a.StorageBundleBytes).SetOverage(a.Overage).SetNillableMaxSplats(a.MaxSplats).Save(ctx)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return out, nil
}

// Account reads an account; a malformed or unknown id is a 404.
func (s *Store) Account(ctx context.Context, id string) (*ent.Account, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("account not found")
	}
	a, err := s.DB.Ent.Account.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFound("account not found")
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return a, nil
}

// UpdateAccount runs fn on the settings of account id under its row lock and stores what fn
// left. A plan change drops the cached integrations of every process (their rate limit follows
// the plan): planChanged tells the caller to drop its own at once.
func (s *Store) UpdateAccount(ctx context.Context, id string, fn func(*Account) error) (out *ent.Account, planChanged bool, err error) {
	err = s.DB.InTx(ctx, func(tx *ent.Tx) error {
		if !ids.Valid(id) {
			return apperr.NotFound("account not found")
		}
		cur, err := tx.Account.Query().Where(account.ID(id)).ForUpdate().Only(ctx)
		if ent.IsNotFound(err) {
			return apperr.NotFound("account not found")
		} else if err != nil {
			return err
		}
		a := accountOf(cur)
		if err := fn(&a); err != nil {
			return err
		}
		up := cur.Update().SetName(a.Name).SetPlan(account.Plan(a.Plan)).SetStorageBundleBytes(a.StorageBundleBytes).
			SetOverage(a.Overage)
		if a.MaxSplats != nil {
			up.SetMaxSplats(*a.MaxSplats)
		} else {
			up.ClearMaxSplats()
		}
		if out, err = up.Save(ctx); err != nil {
			return err
		}
		if planChanged = a.Plan != string(cur.Plan); planChanged {
			return notifyIntegration(ctx, tx, id)
		}
		return nil
	})
	return out, planChanged, err
}
