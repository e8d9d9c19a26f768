package user

import (
	"context"
	"sync"
	"time"

	"github.com/splathost/splathost/internal/customers"
	"github.com/splathost/splathost/workflows"
)

// The billing lifecycle's rules and its transaction are internal/customers (PlanLifecycle,
// Store.Put); what stays here is its Temporal side after the commit.

// retentionCallTimeout bounds the post-commit starts and cancels of retention workflows.
const retentionCallTimeout = 30 * time.Second

// retentionCallers is how many starts or cancels run at once after a large archive.
const retentionCallers = 16

// applyRetentionTimers starts and cancels the retention workflows after the lifecycle
// transaction committed. It is best effort: failures are logged, and a timer whose cancel was
// lost finds the scene restored or protected and removes nothing.
func (s *Service) applyRetentionTimers(ctx context.Context, integrationID string, put *customers.Put) {
	u := put.Customer
	if len(put.Start)+len(put.Cancel) == 0 {
		return
	}
	if s.temporal.Client == nil {
		s.log.Warn("no Temporal client; retention timers not changed", "customer", u.ID,
			"starts", len(put.Start), "cancels", len(put.Cancel))
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
	for _, t := range put.Cancel {
		run(func() {
			if err := workflows.CancelSceneRetention(ctx, s.temporal.Client, t.SceneID, t.ArchivedAt); err != nil {
				s.log.Warn("canceling a scene's retention timer", "scene", t.SceneID, "error", err)
			}
		})
	}
	for _, t := range put.Start {
		run(func() {
			in := workflows.RetentionInput{SceneID: t.SceneID, IntegrationID: integrationID,
				OwnerID: u.ID, ExternalUserID: u.ExternalUserID, ArchivedAt: t.ArchivedAt}
			if err := workflows.StartSceneRetention(ctx, s.temporal.Client, s.temporal.TaskQueue, in); err != nil {
				s.log.Warn("starting a scene's retention timer", "scene", t.SceneID, "error", err)
			}
		})
	}
	wg.Wait()
}
