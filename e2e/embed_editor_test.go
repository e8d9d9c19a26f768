//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/testenv"
)

// editorPath is a route of the editor embed's session-bearer API (docs/embeds.md).
func editorPath(rest string) string { return "/api/embed/editor" + rest }

// editorToken mints an editor session scoped to eu (a guest session when eu is empty).
func editorToken(t *testing.T, tn tenant, eu string) string {
	t.Helper()
	return mintToken(t, tn, eu, map[string]any{"type": "editor"})
}

// editorRoutes are every editor route with a body it would accept, for the scope rules.
func editorRoutes(sceneID string) []struct {
	method, path string
	body         any
} {
	return []struct {
		method, path string
		body         any
	}{
		{"PATCH", editorPath("/splats/" + sceneID), map[string]any{"title": "edited"}},
		{"POST", editorPath("/uploads/splat-file"), map[string]any{"fileName": "a.splat", "contentType": "application/splat", "fileSize": 64}},
		{"POST", editorPath("/uploads/lod-folder"), map[string]any{"files": []map[string]any{
			{"relativePath": "lod-meta.json", "contentType": "application/json", "fileSize": 10},
			{"relativePath": "0/a.webp", "contentType": "image/webp", "fileSize": 10}}}},
		{"POST", editorPath("/uploads/splat-images"), map[string]any{"thumbnail": map[string]any{"contentType": "image/png", "fileSize": 10}}},
		{"POST", editorPath("/uploads/audio"), map[string]any{"fileName": "a.mp3", "contentType": "audio/mpeg", "fileSize": 10}},
		{"POST", editorPath("/splats"), map[string]any{"title": "t", "splatUrl": "https://example.com/x.splat"}},
		{"POST", editorPath("/splats/" + sceneID + "/clone"), nil},
		{"GET", editorPath("/splats/" + sceneID + "/clone/00000000-0000-4000-8000-000000000000"), nil},
	}
}

// TestEmbedEditorScopes: viewer sessions 403 on every editor route, guest editor sessions 403
// AUTH_REQUIRED, scoped editors only their own customer's scenes of their own integration (404
// otherwise), featured refused, and the routes need a session (not keys).
func TestEmbedEditorScopes(t *testing.T) {
	a := newTenant(t)
	own := newScene(t, a, "alice", 2)
	other := newScene(t, a, "bob", 2)
	ownID, otherID := own["id"].(string), other["id"].(string)

	viewer := mintToken(t, a, "alice", map[string]any{"type": "viewer"})
	guest := editorToken(t, a, "")
	for _, rt := range editorRoutes(ownID) {
		t.Run("viewer "+rt.method+" "+rt.path, func(t *testing.T) {
			r := do(t, rt.method, rt.path, sessionHeaders(viewer), rt.body)
			requireEnvelope(t, r, 403)
			require.Equal(t, "FORBIDDEN", r.Body["code"], "a viewer is not asked to sign in (AUTH_REQUIRED)")
		})
		t.Run("guest "+rt.method+" "+rt.path, func(t *testing.T) {
			r := do(t, rt.method, rt.path, sessionHeaders(guest), rt.body)
			requireEnvelope(t, r, 403)
			require.Equal(t, "AUTH_REQUIRED", r.Body["code"], string(r.Raw))
		})
		t.Run("keys "+rt.method+" "+rt.path, func(t *testing.T) {
			requireEnvelope(t, do(t, rt.method, rt.path, a.keys("alice"), rt.body), 401)
		})
		t.Run("no credentials "+rt.method+" "+rt.path, func(t *testing.T) {
			requireEnvelope(t, do(t, rt.method, rt.path, nil, rt.body), 401)
		})
	}
	require.Equal(t, own["title"], splatOf(do(t, "GET", splatPath(ownID), a.keys("alice"), nil))["title"], "nothing changed")

	alice := sessionHeaders(editorToken(t, a, "alice"))
	// Another customer's scene, public or not, is not the editor's to change.
	require.Equal(t, 200, do(t, "PATCH", splatPath(otherID), a.keys("bob"), map[string]any{"visibility": "public"}).Status)
	requireEnvelope(t, do(t, "PATCH", editorPath("/splats/"+otherID), alice, map[string]any{"title": "mine now"}), 404)
	requireEnvelope(t, do(t, "PATCH", editorPath("/splats/"+otherID), alice, map[string]any{"levelData": map[string]any{}}), 404)
	requireEnvelope(t, do(t, "PATCH", editorPath("/splats/ffffffffffffffffffffffff"), alice, map[string]any{"title": "x"}), 404)
	requireEnvelope(t, do(t, "PATCH", editorPath("/splats/not-an-id"), alice, map[string]any{"title": "x"}), 404)
	require.Equal(t, other["title"], splatOf(do(t, "GET", splatPath(otherID), a.keys("bob"), nil))["title"])

	// The same EU under another integration is another customer.
	b := newTenant(t)
	ensureCustomer(t, b, "alice", nil)
	requireEnvelope(t, do(t, "PATCH", editorPath("/splats/"+ownID), sessionHeaders(editorToken(t, b, "alice")),
		map[string]any{"title": "x"}), 404)

	// featured is integration-level curation: never from a session, alone or with other fields.
	require.Equal(t, 200, do(t, "PATCH", splatPath(ownID), a.keys("alice"), map[string]any{"visibility": "public"}).Status)
	for _, body := range []map[string]any{{"featured": true}, {"featured": false}, {"featured": true, "title": "x"}} {
		r := do(t, "PATCH", editorPath("/splats/"+ownID), alice, body)
		requireEnvelope(t, r, 403)
		require.Contains(t, r.Body["message"], "featured")
	}
	got := splatOf(do(t, "GET", splatPath(ownID), a.keys("alice"), nil))
	require.Equal(t, false, got["featured"])
	require.Equal(t, own["title"], got["title"])

	// The scoped editor acts as the v1 PATCH with its EU: same answer shape, same rules.
	r := do(t, "PATCH", editorPath("/splats/"+ownID), alice, map[string]any{"title": "  Renamed  ", "allowClone": true})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	sp := splatOf(r)
	requireItemShape(t, sp)
	require.Equal(t, "Renamed", sp["title"])
	require.Equal(t, true, sp["allowClone"])
	require.Equal(t, "alice", sp["externalUserId"])
	require.Equal(t, true, sp["isOwner"])
	require.Contains(t, requireEnvelope(t, do(t, "PATCH", editorPath("/splats/"+ownID), alice, map[string]any{"title": " "}), 400),
		"title: must be 1-200 characters after trimming")
}

// TestEmbedEditorLevelData: levelData round-trips through the editor PATCH and commit, null
// clears it, and the size and type rules answer 400 with issues (never 500).
func TestEmbedEditorLevelData(t *testing.T) {
	a := newTenant(t)
	id := newScene(t, a, "lena", 2)["id"].(string)
	ed := sessionHeaders(editorToken(t, a, "lena"))
	level := map[string]any{
		"version": 1.0,
		"camera":  map[string]any{"position": []any{1.5, 2.0, -3.25}, "target": []any{0.0, 0.0, 0.0}, "fov": 60.0},
		"annotations": []any{map[string]any{"id": "a1", "title": "Door", "text": "</script><b>&\u2028",
			"position": []any{0.0, 1.0, 2.0}, "pinColour": "#ff0000"}},
		"custom": nil, // keys v1 does not know are kept as they are
	}
	r := do(t, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"levelData": level})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, level, splatOf(r)["levelData"], "the answer is the single-scene shape")
	require.Equal(t, level, splatOf(do(t, "GET", splatPath(id), a.keys("lena"), nil))["levelData"])
	require.Equal(t, level, splatOf(do(t, "GET", "/api/embed/splats/"+id, ed, nil))["levelData"])

	// Metadata alone leaves levelData as it is; null clears it.
	require.Equal(t, 200, do(t, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"description": "d"}).Status)
	require.Equal(t, level, splatOf(do(t, "GET", splatPath(id), a.keys("lena"), nil))["levelData"])
	r = do(t, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"levelData": nil})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Nil(t, splatOf(do(t, "GET", splatPath(id), a.keys("lena"), nil))["levelData"])

	// Exactly 256 KiB serialized is accepted.
	limit := `{"levelData":{"blob":"` + strings.Repeat("x", 256<<10-11) + `"}}`
	require.Equal(t, 200, do(t, "PATCH", editorPath("/splats/"+id), ed, limit).Status)
	for name, tt := range map[string]struct{ body, issue string }{
		"one byte over":     {`{"levelData":{"blob":"` + strings.Repeat("x", 256<<10-10) + `"}}`, "levelData: must be at most 262144 bytes"},
		"array":             {`{"levelData":[1,2,3]}`, "levelData: must be a JSON object or null"},
		"string":            {`{"levelData":"camera"}`, "levelData: must be a JSON object or null"},
		"NUL":               {`{"levelData":{"a":"\u0000"}}`, "levelData.a: must not contain the NUL character"},
		"huge number":       {`{"levelData":{"a":1e999}}`, "levelData.a: number out of range"},
		"deep":              {`{"levelData":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `}`, "levelData: must not nest"},
		"unknown field":     {`{"levelData":{},"camera":1}`, "camera: unknown field"},
		"malformed JSON":    {`{"levelData":{`, "body: malformed JSON"},
		"title still ruled": {`{"levelData":{},"title":"  "}`, "title: must be 1-200 characters after trimming"},
		// levelData version 1 (docs/embeds.md): each problem named by its path.
		"v1 camera":      {`{"levelData":{"camera":{"position":[0,1,2]}}}`, "levelData.camera.target: required"},
		"v1 annotation":  {`{"levelData":{"annotations":[{"id":"a","position":[0,0,0],"title":""}]}}`, "levelData.annotations[0].title: must be 1-120 characters"},
		"v1 version":     {`{"levelData":{"version":2}}`, "levelData.version: must be 1"},
		"v1 colour":      {`{"levelData":{"background":{"color":"blue"}}}`, "levelData.background.color: must be a colour '#rrggbb'"},
		"v1 orientation": {`{"levelData":{"orientation":{"rotation":[720,0,0]}}}`, "levelData.orientation.rotation: each angle must be within -360..360"},
		"v1 audio":       {`{"levelData":{"audio":{"url":"https://cdn.example/a.mp3"}}}`, "levelData.audio.url: must be the fileUrl of an audio upload"},
	} {
		t.Run(name, func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "PATCH", editorPath("/splats/"+id), ed, tt.body), 400)
			require.True(t, issuesMention(issues, tt.issue), "%v", issues)
		})
	}
	require.Len(t, splatOf(do(t, "GET", splatPath(id), a.keys("lena"), nil))["levelData"].(map[string]any)["blob"], 256<<10-11,
		"refused patches change nothing")

	// The v1 PATCH has no levelData: it is the editor's.
	require.True(t, issuesMention(requireEnvelope(t, do(t, "PATCH", splatPath(id), a.keys("lena"),
		map[string]any{"levelData": map[string]any{}}), 400), "levelData: unknown field"))
}

// editorUpload asks the editor route for a signed .splat URL and PUTs body to it.
func editorUpload(t *testing.T, h map[string]string, body []byte) string {
	t.Helper()
	r := do(t, "POST", editorPath("/uploads/splat-file"), h,
		map[string]any{"fileName": "scene.splat", "contentType": "application/splat", "fileSize": len(body)})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	require.Equal(t, 200, putUpload(t, r.Body["uploadUrl"].(string), body,
		map[string]string{"Content-Type": "application/splat", "Cache-Control": cacheControl}))
	return r.Body["fileUrl"].(string)
}

// TestEmbedEditorUploadAndCommitChargeTheCustomer: a scoped editor's upload and commit land
// under the session's customer and are charged to them, with the v1 answers; the commit takes
// levelData.
func TestEmbedEditorUploadAndCommitChargeTheCustomer(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "uma", nil)
	ensureCustomer(t, a, "vic", nil)
	ed := sessionHeaders(editorToken(t, a, "uma"))
	used0, scenes0 := usageOf(t, a, "uma")
	vicUsed0, _ := usageOf(t, a, "vic")

	fileURL := editorUpload(t, ed, splatBytes(5))
	level := map[string]any{"camera": map[string]any{"position": []any{0.0, 1.0, 5.0}, "target": []any{0.0, 0.0, 0.0}}}
	r := do(t, "POST", editorPath("/splats"), ed, map[string]any{"title": "From the editor", "splatUrl": fileURL, "levelData": level})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	sp := splatOf(r)
	require.Equal(t, sp["id"], r.Body["splatId"])
	require.Equal(t, "uma", sp["externalUserId"])
	require.Equal(t, "private", sp["visibility"])
	require.EqualValues(t, 160, sp["fileSizeBytes"])
	for _, k := range []string{"usedBytes", "limitBytes", "remainingBytes", "percentUsed"} {
		require.IsType(t, float64(0), r.Body["usage"].(map[string]any)[k], k)
	}
	used, scenes := usageOf(t, a, "uma")
	require.Equal(t, used0+160, used, "the upload is charged to the session's customer")
	require.Equal(t, scenes0+1, scenes)
	vicUsed, _ := usageOf(t, a, "vic")
	require.Equal(t, vicUsed0, vicUsed)
	got := splatOf(do(t, "GET", splatPath(r.Body["splatId"].(string)), a.keys("uma"), nil))
	require.Equal(t, level, got["levelData"])

	// The v1 upload rules hold: an upload of another customer is theirs alone.
	vicURL := uploadSplat(t, a, "vic", splatBytes(1))
	requireEnvelope(t, do(t, "POST", editorPath("/splats"), ed, map[string]any{"title": "t", "splatUrl": vicURL}), 403)
	require.True(t, issuesMention(requireEnvelope(t, do(t, "POST", editorPath("/splats"), ed,
		map[string]any{"title": "t", "splatUrl": editorUpload(t, ed, splatBytes(1)), "levelData": []any{1}}), 400),
		"levelData: must be a JSON object or null"))
	require.True(t, issuesMention(requireEnvelope(t, do(t, "POST", editorPath("/uploads/splat-file"), ed,
		map[string]any{"fileName": "a.exe", "contentType": "application/splat", "fileSize": 32}), 400), "fileName"))

	// The other two upload routes answer exactly as v1.
	r = do(t, "POST", editorPath("/uploads/splat-images"), ed, map[string]any{"thumbnail": map[string]any{"contentType": "image/png", "fileSize": 100}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Contains(t, r.Body["thumbnail"].(map[string]any)["fileUrl"], "/u/")
	r = do(t, "POST", editorPath("/uploads/lod-folder"), ed, map[string]any{"files": []map[string]any{
		{"relativePath": "lod-meta.json", "contentType": "application/json", "fileSize": 10},
		{"relativePath": "0/a.webp", "contentType": "image/webp", "fileSize": 10}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Len(t, r.Body["uploads"], 2)

	// A customer deactivated after minting can no longer upload: the v1 rule (401), checked live.
	ensureCustomer(t, a, "uma", map[string]any{"status": "inactive"})
	requireEnvelope(t, do(t, "POST", editorPath("/uploads/splat-file"), ed,
		map[string]any{"fileName": "a.splat", "contentType": "application/splat", "fileSize": 32}), 401)
}

// TestEmbedEditorPublishAndDuplicate: a session's first publish of a clone re-checks the scene
// caps (403 plan_limit with its scope) and takes the slot; its Duplicate answers 201 or 202 and
// is pollable on the session route.
func TestEmbedEditorPublishAndDuplicate(t *testing.T) {
	a := newTenant(t)
	src := newScene(t, a, "pia", 2)
	srcID := src["id"].(string)
	clone := newScene(t, a, "pia", 3)["id"].(string)
	makeClone(t, clone, srcID)
	ed := sessionHeaders(editorToken(t, a, "pia"))
	_, scenes0 := accountOf(t, a)

	r := do(t, "PATCH", "/admin/v1/accounts/"+a.AccountID, admin(), map[string]any{"maxSplats": 1})
	require.Equal(t, 200, r.Status, string(r.Raw))
	r = do(t, "PATCH", editorPath("/splats/"+clone), ed, map[string]any{"visibility": "public"})
	requireEnvelope(t, r, 403)
	require.Equal(t, "plan_limit", r.Body["code"])
	require.Equal(t, "splatCount", r.Body["dimension"])
	require.Equal(t, "account", r.Body["scope"])
	require.Equal(t, 200, do(t, "PATCH", "/admin/v1/accounts/"+a.AccountID, admin(), map[string]any{"maxSplats": nil}).Status)

	r = do(t, "PATCH", editorPath("/splats/"+clone), ed, map[string]any{"visibility": "public"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "public", splatOf(r)["visibility"])
	_, scenes := accountOf(t, a)
	require.Equal(t, scenes0+1, scenes, "the first publish of a clone takes its slot")
	// Making it private and public again charges nothing more.
	require.Equal(t, 200, do(t, "PATCH", editorPath("/splats/"+clone), ed, map[string]any{"visibility": "private"}).Status)
	require.Equal(t, 200, do(t, "PATCH", editorPath("/splats/"+clone), ed, map[string]any{"visibility": "public"}).Status)
	_, scenes = accountOf(t, a)
	require.Equal(t, scenes0+1, scenes)

	// Duplicate from the editor: the v1 clone with the session's EU.
	used0, _ := usageOf(t, a, "pia")
	r = do(t, "POST", editorPath("/splats/"+srcID+"/clone"), ed, nil)
	if r.Status == 202 {
		require.Equal(t, "accepted", r.Body["status"], string(r.Raw))
		jobID := r.Body["jobId"].(string)
		r = pollEditorClone(t, ed, srcID, jobID)
		require.Equal(t, 200, r.Status, string(r.Raw))
	} else {
		require.Equal(t, 201, r.Status, string(r.Raw))
	}
	sp := requireCloneSuccess(t, r, r.Status, src)
	require.Equal(t, "pia", sp["externalUserId"])
	require.Nil(t, sp["remixedFrom"], "a Duplicate")
	require.Equal(t, src["title"].(string)+" (Copy)", sp["title"])
	used, _ := usageOf(t, a, "pia")
	require.Equal(t, used0+int64(src["fileSizeBytes"].(float64)), used, "storage is charged at clone time")

	// Another customer's job id is nothing to this session, and a scene of another customer
	// that is not cloneable is refused as in v1.
	requireEnvelope(t, do(t, "GET", editorPath("/splats/"+srcID+"/clone/00000000-0000-4000-8000-000000000000"), ed, nil), 404)
	private := newScene(t, a, "quinn", 1)["id"].(string)
	r = do(t, "POST", editorPath("/splats/"+private+"/clone"), ed, nil)
	require.Contains(t, []int{403, 404}, r.Status, string(r.Raw))

	// Cloning needs a plan with cloning, for sessions too.
	free := newIntegration(t, newAccount(t, "free", 1<<30), nil)
	freeSrc := newScene(t, free, "fay", 1)["id"].(string)
	r = do(t, "POST", editorPath("/splats/"+freeSrc+"/clone"), sessionHeaders(editorToken(t, free, "fay")), nil)
	requireEnvelope(t, r, 403)
	require.Equal(t, "cloning", r.Body["dimension"])
}

// pollEditorClone polls a clone job on the editor route until it closes.
func pollEditorClone(t *testing.T, h map[string]string, srcID, jobID string) *testenv.Response {
	t.Helper()
	var last *testenv.Response
	require.Eventually(t, func() bool {
		last = do(t, "GET", editorPath(fmt.Sprintf("/splats/%s/clone/%s", srcID, jobID)), h, nil)
		return last.Status != 200 || last.Body["status"] != "running"
	}, 2*60e9, 200e6)
	return last
}
