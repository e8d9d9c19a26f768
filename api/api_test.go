package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/api"
	"github.com/splathost/splathost/api/apitest"
)

// TestDocumentIsOpenAPI31 holds openapi.yaml to the OpenAPI 3.1 schema and compiles every JSON
// Schema in it under the 2020-12 dialect, so the document a client downloads is valid.
func TestDocumentIsOpenAPI31(t *testing.T) {
	doc, err := apitest.Parse(api.Document)
	require.NoError(t, err)
	require.Regexp(t, `^3\.1\.\d+$`, doc.Raw["openapi"])
	require.NoError(t, doc.ValidateOpenAPI31())
}
