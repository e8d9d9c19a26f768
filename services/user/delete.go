package user

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/customers"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/workflows"
	"github.com/splathost/splathost/workflows/contract"
)

// purgeStartTimeout bounds the start of a purge workflow after the commit. It runs detached
// from the request: the outbox row makes the start durable, so the answer does not wait for it.
const purgeStartTimeout = 30 * time.Second

// deletedCustomerView is the interface's reduced record returned by DELETE: only these fields.
type deletedCustomerView struct {
	ID             string  `json:"id"`
	ExternalUserID string  `json:"externalUserId"`
	Status         string  `json:"status"`
	BillingState   string  `json:"billingState"`
	UsedBytes      int64   `json:"usedBytes"`
	DeletedAt      *string `json:"deletedAt"`
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
	del, err := s.store().Delete(ctx, customerKey(caller, eu), time.Now(), func(d *customers.Deletion) any {
		u := d.Customer
		return fiber.Map{"status": "success", "deletedSplatCount": len(d.SceneIDs),
			"externalUser": deletedCustomerView{ID: u.ID, ExternalUserID: u.ExternalUserID, Status: string(u.Status),
				BillingState: string(u.BillingState), UsedBytes: u.UsedBytes, DeletedAt: httpx.ISOTimePtr(u.DeletedAt)}}
	})
	if err != nil {
		return err
	}
	s.afterDelete(ctx, caller.IntegrationID, del)
	return httpx.SendRecorded(c, del.Answer)
}

// afterDelete runs a committed deletion's side effects, detached from the request: its webhook
// events, the removal of its scenes' view records and the purge of its objects.
func (s *Service) afterDelete(ctx context.Context, integrationID string, del *customers.Deletion) {
	s.events.Flush(ctx, &del.Hooks)
	bg := context.WithoutCancel(ctx)
	if len(del.SceneIDs) > 0 {
		if err := s.deleteCustomerViews(bg, integrationID, del.SceneIDs); err != nil {
			s.log.Warn("deleting the view records of a deleted customer's scenes", "customer", del.Customer.ID, "error", err)
		}
	}
	if del.Purge != nil {
		s.startPurge(bg, del.Purge)
	}
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
