//go:build e2e

package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
)

// levelDataOf is the levelData of a scene as the v1 single-scene fetch shows it.
func levelDataOf(t *testing.T, tn tenant, eu, id string) map[string]any {
	t.Helper()
	r := do(t, "GET", splatPath(id), tn.keys(eu), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	ld, _ := splatOf(r)["levelData"].(map[string]any)
	return ld
}

// TestCommitInitialCameraSeedsLevelData: a commit's initialCameraPosition and
// initialCameraRotation (pitch, yaw, roll in degrees) become levelData.camera, version 1, when
// levelData has no camera: the camera stands at the position and looks one unit along -Z turned
// by pitch (up) and yaw (about Y). A levelData camera wins; malformed arrays are 400s.
func TestCommitInitialCameraSeedsLevelData(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "cam", nil)
	ed := sessionHeaders(editorToken(t, a, "cam"))
	commit := func(h map[string]string, path string, body map[string]any) string {
		t.Helper()
		body["title"] = "Camera"
		body["splatUrl"] = uploadSplat(t, a, "cam", splatBytes(2))
		r := do(t, "POST", path, h, body)
		require.Equal(t, 201, r.Status, string(r.Raw))
		return r.Body["splatId"].(string)
	}
	for _, tt := range []struct {
		name     string
		rot      any
		position []any
		target   []any
	}{
		{"no rotation looks down -Z", nil, []any{1.0, 2.0, 3.0}, []any{1.0, 2.0, 2.0}},
		{"yaw 90 looks down -X", []any{0, 90, 0}, []any{1.0, 2.0, 3.0}, []any{0.0, 2.0, 3.0}},
		{"pitch 90 looks up", []any{90, 0, 0}, []any{1.0, 2.0, 3.0}, []any{1.0, 3.0, 3.0}},
		{"roll is ignored", []any{0, 180, 45}, []any{-1.0, 0.5, 0.0}, []any{-1.0, 0.5, 1.0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"initialCameraPosition": tt.position}
			if tt.rot != nil {
				body["initialCameraRotation"] = tt.rot
			}
			id := commit(a.keys("cam"), "/api/v1/splats", body)
			require.Equal(t, map[string]any{"version": 1.0, "camera": map[string]any{"position": tt.position, "target": tt.target}},
				levelDataOf(t, a, "cam", id))
		})
	}

	// The editor's commit: a levelData without a camera gains the seeded one, keeping its keys;
	// one with a camera keeps it.
	bg := map[string]any{"color": "#102030"}
	id := commit(ed, editorPath("/splats"), map[string]any{"initialCameraPosition": []any{0, 0, 5},
		"levelData": map[string]any{"background": bg}})
	require.Equal(t, map[string]any{"version": 1.0, "background": bg,
		"camera": map[string]any{"position": []any{0.0, 0.0, 5.0}, "target": []any{0.0, 0.0, 4.0}}}, levelDataOf(t, a, "cam", id))
	own := map[string]any{"position": []any{9.0, 9.0, 9.0}, "target": []any{0.0, 0.0, 0.0}}
	id = commit(ed, editorPath("/splats"), map[string]any{"initialCameraPosition": []any{0, 0, 5},
		"initialCameraRotation": []any{10, 20, 0}, "levelData": map[string]any{"camera": own}})
	require.Equal(t, map[string]any{"camera": own}, levelDataOf(t, a, "cam", id))
	// No initial camera, no levelData: none is made up.
	id = commit(a.keys("cam"), "/api/v1/splats", map[string]any{})
	require.Nil(t, levelDataOf(t, a, "cam", id))

	for name, tt := range map[string]struct {
		field string
		value any
		issue string
	}{
		"two numbers":   {"initialCameraPosition", []any{1, 2}, "initialCameraPosition: must be an array of 3 numbers"},
		"four numbers":  {"initialCameraRotation", []any{1, 2, 3, 4}, "initialCameraRotation: must be an array of 3 numbers"},
		"a string":      {"initialCameraRotation", "0,90,0", "initialCameraRotation: must be an array of 3 numbers"},
		"a null inside": {"initialCameraPosition", []any{0, nil, 1}, "initialCameraPosition: must be an array of 3 numbers"},
		"strings":       {"initialCameraPosition", []any{"0", "1", "2"}, "initialCameraPosition: must be an array of 3 numbers"},
		"an object":     {"initialCameraPosition", map[string]any{"x": 1}, "initialCameraPosition: must be an array of 3 numbers"},
	} {
		t.Run(name, func(t *testing.T) {
			body := map[string]any{"title": "t", "splatUrl": uploadSplat(t, a, "cam", splatBytes(1)), tt.field: tt.value}
			issues := requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("cam"), body), 400)
			require.True(t, issuesMention(issues, tt.issue), "%v", issues)
		})
	}
	// A number beyond float64 is no finite number either (sent raw: Go cannot marshal it).
	body := `{"title":"t","splatUrl":"` + uploadSplat(t, a, "cam", splatBytes(1)) + `","initialCameraPosition":[1e999,0,0]}`
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("cam"), body), 400)
}

// audioBytes are an MP3 (an ID3 tag and padding) or an Ogg stream start of n bytes.
func audioBytes(contentType string, n int) []byte {
	head := []byte("ID3\x04\x00\x00\x00\x00\x00\x00")
	if contentType == "audio/ogg" {
		head = []byte("OggS\x00\x02")
	}
	return append(head, bytes.Repeat([]byte{0x55}, n-len(head))...)
}

// requestAudio asks the editor route for a signed audio upload.
func requestAudio(t *testing.T, h map[string]string, fileName, contentType string, size int) (uploadURL, fileURL string) {
	t.Helper()
	r := do(t, "POST", editorPath("/uploads/audio"), h, map[string]any{"fileName": fileName, "contentType": contentType, "fileSize": size})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	exp, err := time.Parse(time.RFC3339, r.Body["expiresAt"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), exp, 5*time.Minute)
	return r.Body["uploadUrl"].(string), r.Body["fileUrl"].(string)
}

// uploadAudio uploads data through the editor route and returns its fileUrl.
func uploadAudio(t *testing.T, h map[string]string, contentType string, data []byte) string {
	t.Helper()
	name := "track.mp3"
	if contentType == "audio/ogg" {
		name = "track.ogg"
	}
	up, file := requestAudio(t, h, name, contentType, len(data))
	require.Equal(t, 200, putUpload(t, up, data, signedPut(contentType)))
	return file
}

// fetch GETs an absolute URL (an asset URL of an answer).
func fetch(t *testing.T, url string) (int, []byte, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body, resp.Header.Get("Content-Type")
}

// TestEditorAudioUploadRules: the audio upload route takes MP3 or Ogg up to 20 000 000 bytes,
// signs the declared length and type, and refuses anything else with issues.
func TestEditorAudioUploadRules(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "dj", nil)
	ed := sessionHeaders(editorToken(t, a, "dj"))
	for name, tt := range map[string]struct {
		body  map[string]any
		issue string
	}{
		"wav":               {map[string]any{"fileName": "a.wav", "contentType": "audio/wav", "fileSize": 10}, "contentType: must be one of"},
		"over 20 MB":        {map[string]any{"fileName": "a.mp3", "contentType": "audio/mpeg", "fileSize": 20_000_001}, "fileSize: must be an integer from 1 to 20000000"},
		"empty":             {map[string]any{"fileName": "a.mp3", "contentType": "audio/mpeg", "fileSize": 0}, "fileSize"},
		"name of another":   {map[string]any{"fileName": "a.ogg", "contentType": "audio/mpeg", "fileSize": 10}, "fileName: a audio/mpeg file must end in .mp3"},
		"nothing":           {map[string]any{}, "fileName: required"},
		"unknown field":     {map[string]any{"fileName": "a.mp3", "contentType": "audio/mpeg", "fileSize": 10, "x": 1}, "x: unknown field"},
		"size not a number": {map[string]any{"fileName": "a.mp3", "contentType": "audio/mpeg", "fileSize": "10"}, "fileSize"},
	} {
		t.Run(name, func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "POST", editorPath("/uploads/audio"), ed, tt.body), 400)
			require.True(t, issuesMention(issues, tt.issue), "%v", issues)
		})
	}
	requestAudio(t, ed, "long.MP3", "audio/mpeg", 20_000_000)
	requestAudio(t, ed, "voice.opus", "audio/ogg", 1)
	// The signature covers the length and the type.
	data := audioBytes("audio/mpeg", 600)
	up, _ := requestAudio(t, ed, "a.mp3", "audio/mpeg", len(data))
	requirePutRefused(t, up, data[:599], signedPut("audio/mpeg"), "a PUT shorter than declared")
	requirePutRefused(t, up, data, signedPut("audio/ogg"), "a PUT of another type")
	require.Equal(t, 200, putUpload(t, up, data, signedPut("audio/mpeg")))
	// Sessions that may not upload: a viewer (403) and a guest editor (403 AUTH_REQUIRED).
	viewer := sessionHeaders(mintToken(t, a, "dj", map[string]any{"type": "viewer"}))
	requireEnvelope(t, do(t, "POST", editorPath("/uploads/audio"), viewer, map[string]any{"fileName": "a.mp3", "contentType": "audio/mpeg", "fileSize": 10}), 403)
	r := do(t, "POST", editorPath("/uploads/audio"), sessionHeaders(editorToken(t, a, "")), map[string]any{"fileName": "a.mp3", "contentType": "audio/mpeg", "fileSize": 10})
	requireEnvelope(t, r, 403)
	require.Equal(t, "AUTH_REQUIRED", r.Body["code"])
}

// TestEditorAudioIsChargedClonedReleasedAndPurged: an audio file counts against the customer
// once a save names it in levelData.audio.url, like any upload: the scene's fileSizeBytes and
// the customer's and account's usedBytes grow by its size, answers carry a readable asset URL,
// a clone copies it, replacing or dropping it releases it and removes the object, and deleting
// the scene purges it. Audio that is not the customer's own upload is a 400.
func TestEditorAudioIsChargedClonedReleasedAndPurged(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "dj", nil)
	ensureCustomer(t, a, "other", nil)
	st := store(t)
	sc := newScene(t, a, "dj", 3) // 96 bytes
	id := sc["id"].(string)
	ed := sessionHeaders(editorToken(t, a, "dj"))
	patch := func(body map[string]any) map[string]any {
		t.Helper()
		r := do(t, "PATCH", editorPath("/splats/"+id), ed, body)
		require.Equal(t, 200, r.Status, string(r.Raw))
		return splatOf(r)
	}
	used0, _ := usageOf(t, a, "dj")
	acct0, _ := accountOf(t, a)

	mp3 := audioBytes("audio/mpeg", 1000)
	u1 := uploadAudio(t, ed, "audio/mpeg", mp3)
	require.Contains(t, u1, "/u/", "the key lies under the customer's folder")
	sp := patch(map[string]any{"title": "With sound", "levelData": map[string]any{"audio": map[string]any{"url": u1, "loop": true, "volume": 0.5}}})
	require.EqualValues(t, 96+1000, sp["fileSizeBytes"])
	used, _ := usageOf(t, a, "dj")
	require.Equal(t, used0+1000, used, "the audio is charged to the customer")
	acct, _ := accountOf(t, a)
	require.Equal(t, acct0+1000, acct, "and to the account")
	audio := sp["levelData"].(map[string]any)["audio"].(map[string]any)
	require.Equal(t, true, audio["loop"])
	require.Equal(t, 0.5, audio["volume"])
	shown := audio["url"].(string)
	require.Contains(t, shown, "/assets/", "answers carry an asset URL a browser can read")
	require.Equal(t, keyOf(t, u1), keyOf(t, shown))
	status, body, ctype := fetch(t, shown)
	require.Equal(t, 200, status)
	require.Equal(t, mp3, body)
	require.Equal(t, "audio/mpeg", ctype)

	// Saving back the levelData the answer gave (the asset URL) charges nothing twice.
	sp = patch(map[string]any{"levelData": sp["levelData"]})
	require.EqualValues(t, 96+1000, sp["fileSizeBytes"])
	used, _ = usageOf(t, a, "dj")
	require.Equal(t, used0+1000, used)
	// Nor does a save that leaves levelData alone.
	require.EqualValues(t, 96+1000, patch(map[string]any{"description": "d"})["fileSizeBytes"])

	// Audio that is not this customer's own audio upload: 400, nothing charged.
	otherAudio := uploadAudio(t, sessionHeaders(editorToken(t, a, "other")), "audio/mpeg", mp3)
	thumb := fixtures.JPEG(20, 10)
	th, _ := requestImages(t, a, "dj", "image/jpeg", thumb, nil)
	require.Equal(t, 200, putUpload(t, th.uploadURL, thumb, signedPut("image/jpeg")))
	_, notUploaded := requestAudio(t, ed, "a.mp3", "audio/mpeg", 100)
	mislabelled := uploadAudio(t, ed, "audio/ogg", audioBytes("audio/mpeg", 100))
	unknown := u1[:strings.Index(u1, "/a/")+3] + "0123456789abcdef0123456789abcdef/audio.mp3"
	for name, tt := range map[string]struct{ url, issue string }{
		"another customer's":    {otherAudio, "levelData.audio.url: must be the fileUrl of an audio upload"},
		"an external URL":       {"https://cdn.example/a.mp3", "levelData.audio.url: must be the fileUrl of an audio upload"},
		"an image upload":       {th.fileURL, "levelData.audio.url: must be the fileUrl of an audio upload"},
		"the scene's own file":  {sc["splatUrl"].(string), "levelData.audio.url: must be the fileUrl of an audio upload"},
		"never uploaded":        {notUploaded, "levelData.audio.url: nothing was uploaded to this URL"},
		"not what it says":      {mislabelled, "levelData.audio.url: not an Ogg file"},
		"no such upload":        {unknown, "levelData.audio.url: no such upload"},
		"a path out of the key": {u1 + "/../../x", "levelData.audio.url: must be the fileUrl of an audio upload"},
	} {
		t.Run(name, func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "PATCH", editorPath("/splats/"+id), ed,
				map[string]any{"levelData": map[string]any{"audio": map[string]any{"url": tt.url}}}), 400)
			require.True(t, issuesMention(issues, tt.issue), "%v", issues)
		})
	}
	used, _ = usageOf(t, a, "dj")
	require.Equal(t, used0+1000, used, "refused saves charge nothing")

	// Other audio replaces the first: the first is released and removed from the store.
	ogg := audioBytes("audio/ogg", 2000)
	u2 := uploadAudio(t, ed, "audio/ogg", ogg)
	sp = patch(map[string]any{"levelData": map[string]any{"audio": map[string]any{"url": u2}}})
	require.EqualValues(t, 96+2000, sp["fileSizeBytes"])
	used, _ = usageOf(t, a, "dj")
	require.Equal(t, used0+2000, used)
	eventually(t, "the replaced audio is removed", func() bool { return !objectExists(t, st, keyOf(t, u1)) }, func() string { return purgeMark(t, a.IntegrationID) })
	require.True(t, objectExists(t, st, keyOf(t, u2)))
	// An audio file belongs to one scene: another scene cannot take it.
	second := newScene(t, a, "dj", 1)["id"].(string)
	requireEnvelope(t, do(t, "PATCH", editorPath("/splats/"+second), ed,
		map[string]any{"levelData": map[string]any{"audio": map[string]any{"url": u2}}}), 409)

	// A Duplicate copies the audio with the scene (charged at clone time like the rest).
	src := splatOf(do(t, "GET", splatPath(id), a.keys("dj"), nil))
	r := do(t, "POST", clonePath(id), a.keys("dj"), nil)
	dup := requireCloneSuccess(t, r, 201, src)
	dupAudio := levelDataOf(t, a, "dj", dup["id"].(string))["audio"].(map[string]any)["url"].(string)
	dupKey := keyOf(t, dupAudio)
	require.Contains(t, dupKey, "/clone/"+dup["id"].(string)+"/")
	got, gotType, _ := getObject(t, dupKey)
	require.Equal(t, ogg, got)
	require.Equal(t, "audio/ogg", gotType)

	// levelData without audio releases it.
	sp = patch(map[string]any{"levelData": map[string]any{"background": map[string]any{"color": "#000000"}}})
	require.EqualValues(t, 96, sp["fileSizeBytes"])
	usedAfter, _ := usageOf(t, a, "dj")
	usedDup := int64(dup["fileSizeBytes"].(float64))
	require.Equal(t, used0+32+usedDup, usedAfter, "the source is back to its file; the second scene and the copy (with its own audio) hold theirs")
	eventually(t, "the purge", func() bool { return !objectExists(t, st, keyOf(t, u2)) }, func() string { return purgeMark(t, a.IntegrationID) })
	require.True(t, objectExists(t, st, dupKey), "the copy keeps its audio")

	// Deleting a scene purges its audio with its other objects.
	require.Equal(t, 200, do(t, "DELETE", splatPath(dup["id"].(string)), a.keys("dj"), nil).Status)
	eventually(t, "the deleted scene's audio is removed", func() bool { return !objectExists(t, st, dupKey) }, func() string { return purgeMark(t, a.IntegrationID) })

	// The editor's commit charges audio its levelData names with the scene.
	u3 := uploadAudio(t, ed, "audio/mpeg", mp3)
	r = do(t, "POST", editorPath("/splats"), ed, map[string]any{"title": "Committed with sound",
		"splatUrl": editorUpload(t, ed, splatBytes(2)), "levelData": map[string]any{"audio": map[string]any{"url": u3}}})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.EqualValues(t, 64+1000, splatOf(r)["fileSizeBytes"])
	requireEnvelope(t, do(t, "POST", editorPath("/splats"), ed, map[string]any{"title": "t",
		"splatUrl": editorUpload(t, ed, splatBytes(1)), "levelData": map[string]any{"audio": map[string]any{"url": otherAudio}}}), 400)
}

// TestEditorPatchThumbnailAndToggles: the editor PATCH takes the allow* toggles (contract item 6)
// and imageUrl, the thumbnail of one of the customer's splat-images uploads, charged like any
// upload; a new thumbnail releases and removes the old one. The v1 PATCH has no imageUrl.
func TestEditorPatchThumbnailAndToggles(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "pix", nil)
	ensureCustomer(t, a, "other", nil)
	st := store(t)
	id := newScene(t, a, "pix", 2)["id"].(string) // 64 bytes
	ed := sessionHeaders(editorToken(t, a, "pix"))
	used0, _ := usageOf(t, a, "pix")

	r := do(t, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"allowComments": false, "allowReactions": false})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, false, splatOf(r)["allowComments"])
	require.Equal(t, false, splatOf(r)["allowReactions"])
	g := splatOf(do(t, "GET", splatPath(id), a.keys("pix"), nil))
	require.Equal(t, false, g["allowComments"])
	require.Equal(t, false, g["allowReactions"])

	thumb, depth := fixtures.JPEG(40, 20), fixtures.JPEG(20, 10)
	th, dp := requestImages(t, a, "pix", "image/jpeg", thumb, depth)
	require.Equal(t, 200, putUpload(t, th.uploadURL, thumb, signedPut("image/jpeg")))
	require.Equal(t, 200, putUpload(t, dp.uploadURL, depth, signedPut("image/jpeg")))
	otherThumb, _ := requestImages(t, a, "other", "image/jpeg", thumb, nil)
	require.Equal(t, 200, putUpload(t, otherThumb.uploadURL, thumb, signedPut("image/jpeg")))
	notUploaded, _ := requestImages(t, a, "pix", "image/png", []byte("12345"), nil)
	for name, tt := range map[string]struct {
		body   map[string]any
		status int
		issue  string
	}{
		"the depth image":         {map[string]any{"imageUrl": dp.fileURL}, 400, "imageUrl: must be the thumbnail fileUrl of a splat-images upload"},
		"another customer's":      {map[string]any{"imageUrl": otherThumb.fileURL}, 403, ""},
		"never uploaded":          {map[string]any{"imageUrl": notUploaded.fileURL}, 400, "imageUrl: nothing was uploaded to this URL"},
		"an external URL":         {map[string]any{"imageUrl": "https://cdn.example/t.jpg"}, 400, "imageUrl: not an upload URL issued by this service"},
		"null":                    {map[string]any{"imageUrl": nil}, 400, "imageUrl"},
		"empty":                   {map[string]any{"imageUrl": ""}, 400, "imageUrl"},
		"not a string":            {map[string]any{"imageUrl": 3}, 400, "imageUrl: must be a string"},
		"an audio upload":         {map[string]any{"imageUrl": uploadAudio(t, ed, "audio/mpeg", audioBytes("audio/mpeg", 50))}, 400, "imageUrl: this URL comes from another upload endpoint"},
		"toggle not a boolean":    {map[string]any{"allowComments": "no"}, 400, "allowComments"},
		"featured from a session": {map[string]any{"featured": true}, 403, ""},
	} {
		t.Run(name, func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "PATCH", editorPath("/splats/"+id), ed, tt.body), tt.status)
			if tt.issue != "" {
				require.True(t, issuesMention(issues, tt.issue), "%v", issues)
			}
		})
	}
	require.True(t, issuesMention(requireEnvelope(t, do(t, "PATCH", splatPath(id), a.keys("pix"),
		map[string]any{"imageUrl": th.fileURL}), 400), "imageUrl: unknown field"), "the v1 PATCH has no imageUrl")

	// The thumbnail: charged, served, and the depth image its upload signed alongside is removed
	// (the spent ticket would otherwise keep it forever).
	r = do(t, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"imageUrl": th.fileURL, "title": "Framed"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	sp := splatOf(r)
	require.EqualValues(t, 64+len(thumb), sp["fileSizeBytes"])
	used, _ := usageOf(t, a, "pix")
	require.Equal(t, used0+int64(len(thumb)), used)
	require.Contains(t, sp["imageUrl"], "/assets/")
	status, body, _ := fetch(t, sp["imageUrl"].(string))
	require.Equal(t, 200, status)
	require.Equal(t, thumb, body)
	eventually(t, "the unused depth image is removed", func() bool { return !objectExists(t, st, keyOf(t, dp.fileURL)) }, func() string { return purgeMark(t, a.IntegrationID) })
	// Sending back the answer's imageUrl changes nothing.
	r = do(t, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"imageUrl": sp["imageUrl"]})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.EqualValues(t, 64+len(thumb), splatOf(r)["fileSizeBytes"])

	// A new thumbnail replaces the old, which is released and removed.
	thumb2 := fixtures.JPEG(80, 40)
	th2, _ := requestImages(t, a, "pix", "image/jpeg", thumb2, nil)
	require.Equal(t, 200, putUpload(t, th2.uploadURL, thumb2, signedPut("image/jpeg")))
	r = do(t, "PATCH", editorPath("/splats/"+id), ed, map[string]any{"imageUrl": th2.fileURL})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.EqualValues(t, 64+len(thumb2), splatOf(r)["fileSizeBytes"])
	used, _ = usageOf(t, a, "pix")
	require.Equal(t, used0+int64(len(thumb2)), used)
	eventually(t, "the purge", func() bool { return !objectExists(t, st, keyOf(t, th.fileURL)) }, func() string { return purgeMark(t, a.IntegrationID) })
	require.True(t, objectExists(t, st, keyOf(t, th2.fileURL)))
}
