package activities

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/workflows/contract"
)

// TestContractNames keeps contract's activity names equal to what Register registers (the
// exported methods of *Activities): workflows call activities by these names, and a renamed
// method would otherwise only fail when a workflow runs it.
func TestContractNames(t *testing.T) {
	names := []string{contract.PrepareClone, contract.CopyCloneObjects, contract.FinalizeClone,
		contract.RollbackClone, contract.DeleteObjects, contract.LoadPurge, contract.ClosePurge,
		contract.PendingPurges, contract.ClaimUploads, contract.PrepareRendition,
		contract.ConvertRendition, contract.FinishRendition, contract.PendingRenditions,
		contract.DeleteOrphanRenditions, contract.PurgeArchivedScene, contract.ArchivedScenes,
		contract.DeleteOrphanUploads, contract.DeleteStrayObjects, contract.DeleteViews, contract.DropExpiredViews,
		contract.DeleteOrphanViews, contract.AttemptWebhookDelivery, contract.PendingWebhookDeliveries}
	var methods []string
	typ := reflect.TypeFor[*Activities]()
	for i := range typ.NumMethod() {
		methods = append(methods, typ.Method(i).Name)
	}
	require.ElementsMatch(t, methods, names)
}
