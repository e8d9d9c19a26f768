package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplaySceneRetention replays a history recorded from a real run (the e2e test
// TestRetentionTimerFiresAndAnswersItsPhase with SPLATHOST_RECORD_HISTORY=1: phase memo
// upserts, the dormancy timer, the removal) against today's code. A change to SceneRetention
// that would break the timers already running fails here: make it through workflow.GetVersion,
// and add a history of the new version beside this one.
func TestReplaySceneRetention(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(SceneRetention, workflow.RegisterOptions{Name: SceneRetentionWorkflow})
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), "testdata/scene_retention.json"))
}
