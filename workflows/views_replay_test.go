package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// TestReplayViewWorkflows replays histories recorded from real runs (the e2e tests
// TestDeletingAScenesOrCustomerRemovesItsViews and TestViewRetentionDropsOnlyPartitionsOlderThan400Days
// with SPLATHOST_RECORD_HISTORY=1) against today's code. A change that would break running
// workflows fails here: make it through workflow.GetVersion, and record a new history beside.
func TestReplayViewWorkflows(t *testing.T) {
	for file, wf := range map[string]any{
		"testdata/delete_scene_views.json": DeleteSceneViews,
		"testdata/drop_expired_views.json": DropExpiredViews,
		// Recorded after DropExpiredViews began compacting the deleted scenes' rows.
		"testdata/drop_expired_views_compact.json": DropExpiredViews,
	} {
		t.Run(file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(wf)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), file))
		})
	}
}
