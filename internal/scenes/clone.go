package scenes

import (
	"context"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/account"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/quota"
)

// cloningPlans are the plans that include Duplicate and Remix (contract item 2).
var cloningPlans = map[account.Plan]bool{account.PlanPro: true, account.PlanEnterprise: true}

// MayClone is the plan rule of every clone call: a plan without Duplicate and Remix is the
// spec's 403 plan_limit on the 'cloning' dimension.
func MayClone(plan account.Plan) error {
	if cloningPlans[plan] {
		return nil
	}
	return apperr.Forbidden("your plan does not include Duplicate and Remix").With("code", "plan_limit").
		With("dimension", "cloning").With("limit", nil).With("upgradeUrl", quota.UpgradeURL)
}

// CheckCloner applies MayClone to the plan of account accountID.
func (s *Store) CheckCloner(ctx context.Context, accountID string) error {
	plan, err := s.DB.Ent.Account.Query().Where(account.ID(accountID)).Select(account.FieldPlan).String(ctx)
	if err != nil {
		return apperr.Internal(err)
	}
	return MayClone(account.Plan(plan))
}

// CloneSource applies the clone-source rules (db.CloneSourceOf) to scene id for customer
// ownerRecordID of the integration: 404 and 403 answered before a job is started (the job
// checks again when it reserves).
func (s *Store) CloneSource(ctx context.Context, integrationID, ownerRecordID, id string) (*ent.Scene, error) {
	src, _, err := db.CloneSourceOf(ctx, s.DB.Ent, integrationID, ownerRecordID, id)
	return src, err
}
