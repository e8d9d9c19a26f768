package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// TestReplayPurgeCustomerAssets replays a history recorded from a real run (the e2e test
// TestDeleteCustomerCascadesAndPurgesAssets with SPLATHOST_RECORD_HISTORY=1) against today's
// code. A change to PurgeCustomerAssets that would break running purges fails here: make it
// through workflow.GetVersion, and add a history of the new version beside this one.
func TestReplayPurgeCustomerAssets(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(PurgeCustomerAssets)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(tlog.NewStructuredLogger(quiet()), "testdata/purge_customer_assets.json"))
}
