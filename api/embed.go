// Package api holds splathost's public interface as an OpenAPI 3.1 document (openapi.yaml):
// every endpoint of the gateway, its credentials, bodies, answers and error envelopes. The
// gateway serves it at /openapi.yaml and renders it at /docs; the tests hold the routes and the
// real answers of the integration tests to it, so it cannot drift from the service.
package api

import _ "embed"

// Document is openapi.yaml, compiled into the binary so the gateway serves the document of the
// very build that answers.
//
//go:embed openapi.yaml
var Document []byte
