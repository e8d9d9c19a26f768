package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayCloneScene replays a history recorded from a real run (the e2e test
// TestCloneLODFolderPolledToSuccess with SPLATHOST_RECORD_HISTORY=1: a 2 000-object copy, the
// poll signals and abandonment timers around it, the memo upserts) against today's code. A
// change to CloneScene that would break running jobs fails here: make it through
// workflow.GetVersion, and add a history of the new version beside this one.
func TestReplayCloneScene(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(CloneScene, workflow.RegisterOptions{Name: CloneSceneWorkflow})
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), "testdata/clone_scene.json"))
	// A clone of a scene with a rendition, which starts the clone's own (clone-renditions
	// version; recorded by TestRenditionsFollowTheirScene).
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), "testdata/clone_scene_renditions.json"))
}
