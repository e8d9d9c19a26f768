package api_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/api"
	"github.com/splathost/splathost/api/apitest"
	splathost "github.com/splathost/splathost/sdk/go"
	"github.com/splathost/splathost/sdk/go/webhook"
)

// schema is the pointer of a component schema.
func schema(name string) string { return "/components/schemas/" + name }

// answer is the pointer of an operation's JSON answer schema declared in place (path, method,
// status), for the answers the document does not name.
func answer(path, method, status string) string {
	return "/paths/" + strings.ReplaceAll(path, "/", "~1") + "/" + method + "/responses/" + status +
		"/content/application~1json/schema"
}

func body(path, method string) string {
	return "/paths/" + strings.ReplaceAll(path, "/", "~1") + "/" + method + "/requestBody/content/application~1json/schema"
}

// status is the envelope member every client reads itself rather than into a type.
var status = []string{"status"}

// sdkTypes pairs every wire type of the Go SDK with the schema it reads or writes. The SDK's
// types are written by hand (doc comments, Nullable, names a Go reader expects); this table is
// what keeps them equal to api/openapi.yaml, the one source of the interface.
var sdkTypes = []apitest.WireType{
	// Customers.
	{Value: splathost.ExternalUser{}, Pointer: schema("ExternalUser")},
	{Value: splathost.CustomerUpdate{}, Pointer: schema("ExternalUserPatch"), Dir: apitest.Encoded},
	{Value: splathost.DeleteCustomerResult{}, Pointer: schema("ExternalUserDeleted"), Skip: status},
	{Value: splathost.CustomerUsage{}, Pointer: schema("CustomerUsageResponse") + "/properties/usage"},
	{Value: splathost.Usage{}, Pointer: schema("UsageSnapshot")},
	// Scenes. Splat is both the list item and the fetched scene: it is held to the richer one.
	{Value: splathost.Splat{}, Pointer: schema("SplatDetail")},
	{Value: splathost.SplatPage{}, Pointer: schema("SplatList"), Skip: status, Allow: merge(listItem("splats[]."), map[string]string{
		"nextCursor": "NextCursor is documented as empty on the last page: null reads as \"\"",
	})},
	{Value: splathost.SplatPatch{}, Pointer: schema("SplatPatch"), Dir: apitest.Encoded},
	{Value: splathost.CommitRequest{}, Pointer: schema("CommitRequest"), Dir: apitest.Encoded},
	{Value: splathost.CommitResult{}, Pointer: schema("CommitResponse"), Skip: status, Allow: listItem("splat.")},
	{Value: splathost.Trending{}, Pointer: schema("TrendingResponse"), Skip: status, Allow: listItem("splats[].")},
	{Value: splathost.Analytics{}, Pointer: schema("AnalyticsResponse") + "/properties/analytics"},
	{Value: splathost.Rendition{}, Pointer: schema("RenditionRow")},
	// Uploads.
	{Value: splathost.FileUploadRequest{}, Pointer: schema("SplatFileUploadRequest"), Dir: apitest.Encoded},
	{Value: splathost.FileUpload{}, Pointer: schema("SplatFileUpload"), Skip: status},
	{Value: splathost.FolderFile{}, Pointer: schema("LodFolderUploadRequest") + "/properties/files/items", Dir: apitest.Encoded},
	{Value: splathost.FolderUpload{}, Pointer: schema("LodFolderUpload"), Skip: status},
	{Value: splathost.ImageUploadRequest{}, Pointer: schema("SplatImagesUploadRequest"), Dir: apitest.Encoded},
	{Value: splathost.ImageUploads{}, Pointer: schema("SplatImagesUpload"), Skip: status},
	{Value: splathost.MultipartUpload{}, Pointer: schema("MultipartUpload"), Skip: status},
	{Value: splathost.MultipartStatus{}, Pointer: schema("MultipartUploadStatus"), Skip: status},
	{Value: splathost.CompletedPart{}, Pointer: schema("MultipartCompleteRequest") + "/properties/parts/items", Dir: apitest.Encoded},
	// Clone.
	{Value: splathost.CloneResult{}, Pointer: schema("CloneResult"), Skip: status, Allow: listItem("splat.")},
	{Value: splathost.CloneJob{}, Pointer: schema("CloneAccepted"), Skip: status},
	// Sessions.
	{Value: splathost.SessionRequest{}, Pointer: schema("MintRequest"), Dir: apitest.Encoded},
	{Value: splathost.Session{}, Pointer: schema("MintResponse"), Skip: status},
	// Webhooks.
	{Value: splathost.Webhook{}, Pointer: schema("WebhookWithSecretResponse") + "/properties/webhook"},
	{Value: splathost.WebhookInput{}, Pointer: body("/api/v1/webhooks", "post"), Dir: apitest.Encoded},
	{Value: splathost.WebhookDeliveries{}, Pointer: answer("/api/v1/webhooks/{webhookId}/deliveries", "get", "200"), Skip: status},
	// Webhook deliveries (package webhook; the service writes the same types).
	{Value: webhook.Event{}, Pointer: schema("WebhookEvent")},
	{Value: webhook.SplatData{}, Pointer: schema("WebhookSplatData")},
	{Value: webhook.SceneRef{}, Pointer: schema("WebhookSceneRef")},
	{Value: webhook.CloneSucceededData{}, Pointer: schema("WebhookCloneSucceeded")},
	{Value: webhook.CloneFailedData{}, Pointer: schema("WebhookCloneFailed")},
	{Value: webhook.ExternalUserData{}, Pointer: schema("WebhookExternalUserDeleted")},
	// Operator.
	{Value: splathost.Account{}, Pointer: schema("Account")},
	{Value: splathost.NewAccount{}, Pointer: schema("AccountCreate"), Dir: apitest.Encoded, Allow: map[string]string{
		"maxSplats": "nil sends null, no cap, which is what omitting it means",
		"overage":   "false is the documented default",
	}},
	{Value: splathost.AccountUpdate{}, Pointer: schema("AccountPatch"), Dir: apitest.Encoded},
	{Value: splathost.Integration{}, Pointer: schema("IssuedIntegration")},
	{Value: splathost.NewIntegration{}, Pointer: schema("IntegrationCreate"), Dir: apitest.Encoded, Allow: map[string]string{
		"capabilities": "required: a caller that leaves it nil gets the API's 400, as for an omitted field",
	}},
	// Error details, read from the error envelope beside its status, code and message.
	{Value: splathost.StorageQuotaDetails{}, Pointer: schema("StorageQuotaError"), Skip: []string{"status", "code", "message"}},
	{Value: splathost.PlanLimitDetails{}, Pointer: schema("PlanLimitError"), Skip: []string{"status", "code", "message"}},
	{Value: splathost.CloneInProgressDetails{}, Pointer: schema("CloneInProgressError"), Skip: []string{"status", "code", "message"}},
}

// listItem allows Splat's two fetch-only fields where a scene is listed (at prefix): Splat serves
// both shapes, and documents that only GetSplat fills them.
func listItem(prefix string) map[string]string {
	why := "Splat is also the list item, which has no such field (filled by GetSplat only)"
	return map[string]string{prefix + "levelData": why, prefix + "lodFolderKey": why}
}

func merge(a, b map[string]string) map[string]string {
	maps.Copy(a, b)
	return a
}

// TestSDKTypesMatchTheDocument holds the Go SDK's wire types to openapi.yaml field by field.
func TestSDKTypesMatchTheDocument(t *testing.T) {
	apitest.RequireWireTypes(t, sdkTypes...)
}

// TestWebhookTypesAreTheDocumentedOnes holds the event types (the SDK's, which the service
// writes) to the document's enum, in its order.
func TestWebhookTypesAreTheDocumentedOnes(t *testing.T) {
	doc, err := apitest.Parse(api.Document)
	require.NoError(t, err)
	enum := doc.Raw["components"].(map[string]any)["schemas"].(map[string]any)["WebhookEventType"].(map[string]any)["enum"]
	var want []string
	for _, v := range enum.([]any) {
		want = append(want, v.(string))
	}
	require.Equal(t, want, webhook.Types)
}

// TestWebhookEventDataFollowsItsType holds the document's per-type data rule: each event type
// names exactly one data schema, and a body whose data has another type's shape is refused.
func TestWebhookEventDataFollowsItsType(t *testing.T) {
	doc, err := apitest.Parse(api.Document)
	require.NoError(t, err)
	event := doc.Raw["components"].(map[string]any)["schemas"].(map[string]any)["WebhookEvent"].(map[string]any)
	mapped := map[string]int{}
	for _, rule := range event["allOf"].([]any) {
		for _, typ := range rule.(map[string]any)["if"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["enum"].([]any) {
			mapped[typ.(string)]++
		}
	}
	for _, typ := range webhook.Types {
		require.Equal(t, 1, mapped[typ], "%s names one data schema", typ)
	}
	require.Len(t, mapped, len(webhook.Types))

	sch, err := doc.Schema("/components/schemas/WebhookEvent")
	require.NoError(t, err)
	body := func(typ, data string) any {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"type":"` + typ + `","timestamp":"2026-01-02T03:04:05.000Z","sequence":1,"data":` + data + `}`))
		require.NoError(t, err)
		return v
	}
	ref := `{"splatId":"0123456789abcdef01234567","externalUserId":"c"}`
	require.NoError(t, sch.Validate(body(webhook.SplatDeleted, ref)))
	require.NoError(t, sch.Validate(body(webhook.RetentionPurged, ref)))
	require.Error(t, sch.Validate(body(webhook.SplatCreated, ref)), "a splat.created carries a splat")
	require.Error(t, sch.Validate(body(webhook.ExternalUserDeleted, ref)), "externalUser.deleted carries externalUserId alone")
	require.NoError(t, sch.Validate(body(webhook.ExternalUserDeleted, `{"externalUserId":"c"}`)))
}
