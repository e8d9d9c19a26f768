package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/workflows"
)

// TestSchedulesKeepTheirDefinitions pins every schedule the worker puts in place: id, interval,
// workflow, argument, task queue, timeout and overlap policy. A deployment converges on what
// schedules returns (ensureSchedule updates existing ones), so a change here changes production.
func TestSchedulesKeepTheirDefinitions(t *testing.T) {
	type want struct {
		id       string
		every    time.Duration
		workflow any
		arg      any
	}
	wants := []want{
		{workflows.OrphanSweepScheduleID, workflows.OrphanSweepEvery, workflows.SweepOrphanUploads, workflows.SweepInput{}},
		{workflows.PurgeRedriveScheduleID, workflows.PurgeRedriveEvery, workflows.RedrivePurges, workflows.RedriveInput{}},
		{workflows.RetentionRedriveScheduleID, workflows.RetentionRedriveEvery, workflows.RedriveRetention, workflows.RetentionRedriveInput{}},
		{workflows.ViewRetentionScheduleID, workflows.ViewRetentionEvery, workflows.DropExpiredViews, workflows.ViewRetentionInput{}},
		{workflows.WebhookRedriveScheduleID, workflows.WebhookRedriveEvery, workflows.RedriveWebhooks, workflows.WebhookRedriveInput{}},
	}
	got := schedules("tq")
	require.Len(t, got, len(wants))
	for i, w := range wants {
		s := got[i]
		require.Equal(t, w.id, s.ID)
		require.Equal(t, client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: w.every}}}, s.Spec, w.id)
		require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, s.Overlap, w.id)
		a, ok := s.Action.(*client.ScheduleWorkflowAction)
		require.True(t, ok, w.id)
		require.Equal(t, w.id, a.ID)
		require.Equal(t, fmt.Sprintf("%p", w.workflow), fmt.Sprintf("%p", a.Workflow), w.id)
		require.Equal(t, []any{w.arg}, a.Args, w.id)
		require.Equal(t, "tq", a.TaskQueue, w.id)
		require.Equal(t, time.Hour, a.WorkflowExecutionTimeout, w.id)
		// Nothing else is set: a field added by accident would reach every deployment. (Functions
		// compare unequal by reflection, so the workflow, checked above, is left out.)
		rest := *a
		rest.Workflow = nil
		require.Equal(t, client.ScheduleWorkflowAction{ID: w.id, Args: a.Args, TaskQueue: "tq", WorkflowExecutionTimeout: time.Hour},
			rest, w.id)
		require.Equal(t, client.ScheduleOptions{ID: s.ID, Spec: s.Spec, Action: s.Action, Overlap: s.Overlap}, s, w.id)
	}
}
