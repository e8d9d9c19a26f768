package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// TestReplayRedrivePurges replays histories of real re-drives against today's code:
// redrive_purges.json was recorded before outbox rows had kinds (the e2e test
// TestPurgeRedriveStartsForgottenPurges with SPLATHOST_RECORD_HISTORY=1 on the code of before),
// redrive_purges_kinds.json after (TestSceneDeleteRedriveFinishesForgottenPurge: a scene row
// started as PurgeAssets, behind workflow.GetVersion). Running re-drives of either build
// replay.
func TestReplayRedrivePurges(t *testing.T) {
	for _, file := range []string{"testdata/redrive_purges.json", "testdata/redrive_purges_kinds.json"} {
		t.Run(file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(RedrivePurges)
			r.RegisterWorkflow(PurgeCustomerAssets)
			r.RegisterWorkflow(PurgeAssets)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), file))
		})
	}
}

// TestReplayPurgeAssets replays a scene DELETE's purge recorded from a real run (the e2e test
// TestDeleteLODSceneAnswersAtOncePurgesEventually with SPLATHOST_RECORD_HISTORY=1): a change
// to PurgeAssets that would break running purges fails here.
func TestReplayPurgeAssets(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(PurgeAssets)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), "testdata/purge_assets_scene.json"))
}

// TestReplaySchedules replays runs of the scheduled sweeps and re-drives recorded from real runs
// (with SPLATHOST_RECORD_HISTORY=1: TestOrphanSweep… in e2e/sweep_test.go for the orphan sweep of
// uploads and of interrupted renditions, TestRetentionRedriveStartsMissingTimers,
// TestWebhookSurvivesEmitterKill for the webhook re-drive and its abandoned children). A change
// that would break a run in flight when a new build deploys fails here.
func TestReplaySchedules(t *testing.T) {
	for file, wf := range map[string]any{
		"testdata/sweep_orphan_uploads.json":    SweepOrphanUploads,
		"testdata/sweep_orphan_renditions.json": SweepOrphanUploads,
		"testdata/redrive_retention.json":       RedriveRetention,
		"testdata/redrive_webhooks.json":        RedriveWebhooks,
	} {
		t.Run(file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(wf)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), file))
		})
	}
}
