package apitest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/api"
	"github.com/splathost/splathost/api/apitest"
)

func load(t *testing.T) *apitest.Document {
	t.Helper()
	doc, err := apitest.Parse(api.Document)
	require.NoError(t, err)
	return doc
}

func TestFindPrefersLiteralSegments(t *testing.T) {
	doc := load(t)
	tests := []struct{ method, path, want string }{
		{"GET", "/api/v1/splats/trending?window=7", "/api/v1/splats/trending"},
		{"GET", "/api/v1/splats/0123456789abcdef01234567", "/api/v1/splats/{splatId}"},
		{"get", "/api/v1/splats/0123456789abcdef01234567/clone/x", "/api/v1/splats/{splatId}/clone/{jobId}"},
		// A static asset's name may span folders.
		{"GET", "/embed/assets/chunks/engine-spark-abc.js", "/embed/assets/{asset}"},
		{"GET", "/embed/viewer?session=t", "/embed/viewer"},
	}
	for _, tt := range tests {
		op, ok := doc.Find(tt.method, tt.path)
		require.True(t, ok, tt.path)
		require.Equal(t, tt.want, op.Path, tt.path)
	}
	for _, miss := range [][2]string{{"GET", "/api/v1/splats-nope"}, {"POST", "/api/v1/splats/trending"}, {"GET", "/api/v1/splats/"}} {
		_, ok := doc.Find(miss[0], miss[1])
		require.False(t, ok, miss)
	}
}

func TestCheckHoldsAnswersToTheDocument(t *testing.T) {
	doc := load(t)
	const json = "application/json"
	tests := []struct {
		name, method, path string
		status             int
		contentType, body  string
		problem            string // "" when the answer is valid
	}{
		{"valid error envelope", "GET", "/api/v1/splats/0123456789abcdef01234567", 404, json,
			`{"status":"error","code":"NOT_FOUND","message":"scene not found"}`, ""},
		{"envelope without code", "GET", "/api/v1/splats/0123456789abcdef01234567", 404, json,
			`{"status":"error","message":"scene not found"}`, "code"},
		{"envelope with an empty code", "GET", "/api/v1/splats/0123456789abcdef01234567", 404, json,
			`{"status":"error","code":"","message":"scene not found"}`, "code"},
		{"envelope with a code outside the enum", "GET", "/api/v1/splats/0123456789abcdef01234567", 404, json,
			`{"status":"error","code":"NOPE","message":"scene not found"}`, "code"},
		{"envelope without message", "GET", "/api/v1/splats/0123456789abcdef01234567", 404, json,
			`{"status":"error","code":"NOT_FOUND"}`, "message"},
		{"undocumented status", "GET", "/healthz", 418, json, `{}`, "status 418 is not documented"},
		{"undocumented media type", "GET", "/healthz", 200, "text/plain", `ok`, "Content-Type text/plain is not documented"},
		{"html page", "GET", "/embed/viewer?session=x", 401, "text/html; charset=utf-8", `<p>no</p>`, ""},
		{"plan_limit needs its fields", "POST", "/api/v1/splats", 403, json,
			`{"status":"error","message":"cap","code":"plan_limit"}`, "dimension"},
		{"storage quota with its fields", "POST", "/api/v1/splats", 413, json,
			`{"status":"error","code":"STORAGE_QUOTA_EXCEEDED","scope":"customer","usedBytes":1,"limitBytes":2,"remainingBytes":1,"requestedBytes":5}`, ""},
		{"extra field on an exact shape", "GET", "/healthz", 200, json, `{"status":"ok","extra":1}`, "extra"},
		{"not JSON", "GET", "/healthz", 200, json, `ok`, "not JSON"},
		{"no body documented", "GET", "/sdk/x.js", 304, "", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			documented, err := doc.Check(tt.method, tt.path, tt.status, tt.contentType, []byte(tt.body))
			require.True(t, documented)
			if tt.problem == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.problem)
		})
	}
	documented, err := doc.Check("GET", "/nowhere", 404, json, []byte(`{}`))
	require.False(t, documented)
	require.NoError(t, err)
}

// Every error envelope has a code of the enum, on documented routes and others alike.
func TestCheckErrorCode(t *testing.T) {
	doc := load(t)
	for body, problem := range map[string]string{
		`{"status":"error","code":"NOT_FOUND","message":"route not found"}`: "",
		`{"status":"error","message":"route not found"}`:                    "without a code",
		`{"status":"error","code":"","message":"x"}`:                        "without a code",
		`{"status":"error","code":"NOPE","message":"x"}`:                    "not in the ErrorCode enum",
		`{"status":"success"}`:                                              "",
		`[1]`:                                                               "",
	} {
		err := doc.CheckErrorCode("GET", "/nowhere", "application/json; charset=utf-8", []byte(body))
		if problem == "" {
			require.NoError(t, err, body)
		} else {
			require.ErrorContains(t, err, problem, body)
		}
	}
	require.NoError(t, doc.CheckErrorCode("GET", "/nowhere", "text/html", []byte(`{"status":"error"}`)))
}
