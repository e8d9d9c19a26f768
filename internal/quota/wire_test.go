package quota

import (
	"testing"

	"github.com/splathost/splathost/api/apitest"
)

// TestAnswerTypesMatchTheDocument holds the storage meter every commit, clone and usage answer
// carries to api/openapi.yaml field by field (names, JSON types, nullability, every required
// member always sent); the e2e conformance test sees only the answers its requests happen to get.
func TestAnswerTypesMatchTheDocument(t *testing.T) {
	apitest.RequireWireTypes(t, apitest.WireType{Value: Snapshot{}, Pointer: "/components/schemas/UsageSnapshot", Dir: apitest.Encoded})
}
