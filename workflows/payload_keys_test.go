package workflows

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/splathost/splathost/workflows/contract"
)

// TestRecordedPayloadsReadIntoRenamedFields decodes the payloads of recorded histories into
// today's structs. Replay alone does not prove it: it never decodes an activity's input, and a
// renamed Go field without its old JSON key would read as "" from every job already running
// (SplatID was JobID, SourceSplatID SourceSceneID, OwnerID OwnerRecordID or, in the purge and
// retention payloads, ExternalUserRecordID).
func TestRecordedPayloadsReadIntoRenamedFields(t *testing.T) {
	f, err := os.Open("testdata/clone_scene.json")
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	dc := converter.GetDefaultDataConverter()
	var in CloneInput
	require.NoError(t, dc.FromPayloads(h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &in))
	require.NotEmpty(t, in.SplatID)
	require.NotEmpty(t, in.SourceSplatID)
	require.NotEmpty(t, in.OwnerID)

	seen := map[string]bool{}
	for _, e := range h.GetEvents() {
		a := e.GetActivityTaskScheduledEventAttributes()
		if a == nil {
			continue
		}
		name := a.GetActivityType().GetName()
		seen[name] = true
		switch name {
		case contract.PrepareClone:
			var p contract.PrepareCloneInput
			require.NoError(t, dc.FromPayloads(a.GetInput(), &p))
			require.Equal(t, contract.PrepareCloneInput{SplatID: in.SplatID, SourceSplatID: in.SourceSplatID,
				IntegrationID: in.IntegrationID, AccountID: in.AccountID, OwnerID: in.OwnerID, ClonedAt: in.ClonedAt}, p)
		case contract.CopyCloneObjects:
			var p contract.CopyCloneInput
			require.NoError(t, dc.FromPayloads(a.GetInput(), &p))
			require.Equal(t, in.SplatID, p.SplatID)
		case contract.FinalizeClone:
			var p contract.FinalizeCloneInput
			require.NoError(t, dc.FromPayloads(a.GetInput(), &p))
			require.Equal(t, contract.FinalizeCloneInput{SplatID: in.SplatID, OwnerID: in.OwnerID, AccountID: in.AccountID}, p)
		}
	}
	require.True(t, seen[contract.PrepareClone] && seen[contract.CopyCloneObjects] && seen[contract.FinalizeClone], "history lacks a clone activity: %v", seen)

	f2, err := os.Open("testdata/purge_customer_assets.json")
	require.NoError(t, err)
	defer f2.Close()
	h, err = client.HistoryFromJSON(f2, client.HistoryJSONOptions{})
	require.NoError(t, err)
	var purge PurgeInput
	require.NoError(t, dc.FromPayloads(h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &purge))
	require.NotEmpty(t, purge.OwnerID)
}
