package scenes

import (
	"testing"

	"github.com/splathost/splathost/api/apitest"
)

// TestAnswerTypesMatchTheDocument holds the single-scene fetch (the SDK's Splat with levelData and
// lodFolderKey always sent) to api/openapi.yaml field by field (names, JSON types, nullability,
// every required member always sent); the e2e conformance test sees only the answers its requests
// happen to get.
func TestAnswerTypesMatchTheDocument(t *testing.T) {
	apitest.RequireWireTypes(t, apitest.WireType{Value: Detail{}, Pointer: "/components/schemas/SplatDetail", Dir: apitest.Encoded,
		Allow: map[string]string{"processing.message": "sent always (null unless failed or skipped), documented as optional: " +
			"it is this service's addition to contract item 15's processing block"}})
}
