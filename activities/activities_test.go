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
		contract.DeleteOrphanViews, contract.CompactDeletedViews, contract.AttemptWebhookDelivery, contract.PendingWebhookDeliveries}
	methods := func(typ reflect.Type) (out []string) {
		for i := range typ.NumMethod() {
			out = append(out, typ.Method(i).Name)
		}
		return out
	}
	require.ElementsMatch(t, methods(reflect.TypeFor[*Activities]()), names)
	// contract.Activities, which *Activities implements and the workflows' tests fake, lists
	// every one of them and nothing else.
	require.ElementsMatch(t, methods(reflect.TypeFor[contract.Activities]()), names)
}
