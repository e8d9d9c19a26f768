package session

import (
	"testing"

	"github.com/splathost/splathost/api/apitest"
)

// TestAnswerTypesMatchTheDocument holds the mint answer (a string expiresAt with fixed
// milliseconds, so not the SDK's Session) to api/openapi.yaml field by field (names, JSON types,
// nullability, every required member always sent); the e2e conformance test sees only the answers
// its requests happen to get.
func TestAnswerTypesMatchTheDocument(t *testing.T) {
	apitest.RequireWireTypes(t, apitest.WireType{Value: mintResponse{}, Pointer: "/components/schemas/MintResponse", Dir: apitest.Encoded})
}
