package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/workflows"
)

// schedules are the Temporal schedules the product relies on.
func schedules(taskQueue string) []client.ScheduleOptions {
	return []client.ScheduleOptions{
		every(taskQueue, workflows.OrphanSweepScheduleID, workflows.OrphanSweepEvery, workflows.SweepOrphanUploads, workflows.SweepInput{}),
		every(taskQueue, workflows.PurgeRedriveScheduleID, workflows.PurgeRedriveEvery, workflows.RedrivePurges, workflows.RedriveInput{}),
		every(taskQueue, workflows.RetentionRedriveScheduleID, workflows.RetentionRedriveEvery, workflows.RedriveRetention,
			workflows.RetentionRedriveInput{}),
		every(taskQueue, workflows.ViewRetentionScheduleID, workflows.ViewRetentionEvery, workflows.DropExpiredViews,
			workflows.ViewRetentionInput{}),
		every(taskQueue, workflows.WebhookRedriveScheduleID, workflows.WebhookRedriveEvery, workflows.RedriveWebhooks,
			workflows.WebhookRedriveInput{}),
	}
}

// every is a schedule that starts workflow(arg) every interval, as a workflow whose id is the
// schedule's own, bounded to an hour. Overlap SKIP: a run still going when the next is due means
// the previous one has the work in hand.
func every(taskQueue, id string, interval time.Duration, workflow, arg any) client.ScheduleOptions {
	return client.ScheduleOptions{
		ID:   id,
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}},
		Action: &client.ScheduleWorkflowAction{ID: id, Workflow: workflow, Args: []any{arg}, TaskQueue: taskQueue,
			WorkflowExecutionTimeout: time.Hour},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	}
}

// keepSchedules puts the schedules in place, retrying with backoff while Temporal is not
// reachable (the client is lazy, and the worker must not fail its start for it), then triggers
// one purge re-drive and one webhook re-drive so that outbox rows left open while no worker ran
// are handled now rather than at the next interval.
func keepSchedules(ctx context.Context, c client.Client, taskQueue string, log *slog.Logger) {
	delay := time.Second
	for {
		err := ensureSchedules(ctx, c, taskQueue)
		if err == nil {
			log.Info("schedules in place", "schedules", []string{workflows.OrphanSweepScheduleID, workflows.PurgeRedriveScheduleID,
				workflows.RetentionRedriveScheduleID, workflows.ViewRetentionScheduleID, workflows.WebhookRedriveScheduleID})
			return
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("schedules not in place yet; retrying", "error", err, "retryIn", delay.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Minute)
	}
}

func ensureSchedules(ctx context.Context, c client.Client, taskQueue string) error {
	for _, s := range schedules(taskQueue) {
		if err := ensureSchedule(ctx, c, s); err != nil {
			return fmt.Errorf("schedule %s: %w", s.ID, err)
		}
	}
	// The rendition re-drive of before (200 scenes every 5 minutes, all at once, first come
	// first served) is the media worker's dispatcher now; its schedule would start bursts
	// beside it.
	err := c.ScheduleClient().GetHandle(ctx, workflows.RenditionRedriveScheduleID).Delete(ctx)
	var missing *serviceerror.NotFound
	if err != nil && !errors.As(err, &missing) {
		return fmt.Errorf("delete schedule %s: %w", workflows.RenditionRedriveScheduleID, err)
	}
	for _, id := range []string{workflows.PurgeRedriveScheduleID, workflows.WebhookRedriveScheduleID} {
		h := c.ScheduleClient().GetHandle(ctx, id)
		if err := h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP}); err != nil {
			return fmt.Errorf("trigger %s: %w", id, err)
		}
	}
	return nil
}

// ensureSchedule creates a schedule, or brings an existing one to this build's definition, so
// every deployment converges on the code's intervals and actions. Its pause state is kept: an
// operator's pause survives a restart.
func ensureSchedule(ctx context.Context, c client.Client, opts client.ScheduleOptions) error {
	_, err := c.ScheduleClient().Create(ctx, opts)
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err
	}
	return c.ScheduleClient().GetHandle(ctx, opts.ID).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			spec := opts.Spec
			s.Spec = &spec
			s.Action = opts.Action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = opts.Overlap
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
}
