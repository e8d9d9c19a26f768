package user

import (
	"testing"

	"github.com/splathost/splathost/api/apitest"
	"github.com/splathost/splathost/internal/customers"
)

// TestAnswerTypesMatchTheDocument holds the customer record this service writes (scanned from pgx,
// its metadata kept raw, so it is not the SDK's ExternalUser) to api/openapi.yaml field by field
// (names, JSON types, nullability, every required member always sent); the e2e conformance test
// sees only the answers its requests happen to get.
func TestAnswerTypesMatchTheDocument(t *testing.T) {
	apitest.RequireWireTypes(t, apitest.WireType{Value: customers.View{}, Pointer: "/components/schemas/ExternalUser", Dir: apitest.Encoded})
}
