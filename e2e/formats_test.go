//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
)

// signedPut is what every signed upload must carry besides its body.
func signedPut(contentType string) map[string]string {
	return map[string]string{"Content-Type": contentType, "Cache-Control": cacheControl}
}

// getObject reads the stored bytes of a committed object back from the store, with the headers
// it was stored with: for an upload key its sealed copy (objectkeys.Sealed), which the scene
// serves; keys the service writes itself are their own stored form.
func getObject(t *testing.T, key string) (body []byte, contentType, cache string) {
	t.Helper()
	st := store(t)
	key = objectkeys.Sealed(key)
	out, err := st.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(key)})
	require.NoError(t, err, key)
	defer out.Body.Close()
	body, err = io.ReadAll(out.Body)
	require.NoError(t, err)
	return body, aws.ToString(out.ContentType), aws.ToString(out.CacheControl)
}

// uploadFile runs step one and two of a single-file upload of data as fileName and returns the
// fileUrl.
func uploadFile(t *testing.T, tn tenant, eu, fileName, contentType string, data []byte) string {
	t.Helper()
	r := do(t, "POST", "/api/v1/uploads/splat-file", tn.keys(eu),
		map[string]any{"fileName": fileName, "contentType": contentType, "fileSize": len(data)})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, 200, putUpload(t, r.Body["uploadUrl"].(string), data, signedPut(contentType)))
	return r.Body["fileUrl"].(string)
}

// TestFormatRoundTrip uploads a real file of every accepted format, commits it and reads the
// stored object back byte for byte.
func TestFormatRoundTrip(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "formats", nil)
	cases := []struct {
		name, fileName, contentType string
		data                        []byte
	}{
		{"ply application/ply", "scene.ply", "application/ply", fixtures.PLY(200)},
		{"ply model/ply", "scene.ply", "model/ply", fixtures.PLY(50)},
		{"splat", "scene.splat", "application/splat", fixtures.Splat(200)},
		{"ksplat", "scene.ksplat", "application/ksplat", fixtures.KSplat(200)},
		{"sog", "scene.sog", "application/sog", fixtures.SOG(200)},
		{"sog octet-stream", "Scene.SOG", "application/octet-stream", fixtures.SOG(10)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fileURL := uploadFile(t, a, "formats", c.fileName, c.contentType, c.data)
			key := keyOf(t, fileURL)
			require.True(t, strings.HasSuffix(key, strings.ToLower(c.fileName[strings.LastIndex(c.fileName, "."):])), key)

			r := do(t, "POST", "/api/v1/splats", a.keys("formats"), map[string]any{"title": c.name, "splatUrl": fileURL})
			require.Equal(t, 201, r.Status, string(r.Raw))
			sp := r.Body["splat"].(map[string]any)
			require.Equal(t, "file", sp["splatType"])
			require.Equal(t, keyOf(t, fileURL), keyOf(t, sp["splatUrl"].(string)))
			require.EqualValues(t, len(c.data), sp["fileSizeBytes"])

			got, ctype, cache := getObject(t, key)
			require.True(t, bytes.Equal(c.data, got), "stored bytes differ from the uploaded ones (%d vs %d bytes)", len(got), len(c.data))
			require.Equal(t, c.contentType, ctype)
			require.Equal(t, cacheControl, cache)
		})
	}
}

// lodUpload is a lod-folder response.
type lodUpload struct {
	folderKey, manifestURL string
	urls                   map[string]string // relativePath → uploadUrl
	keys                   map[string]string // relativePath → key
}

// requestLOD asks for signed URLs for every file of folder.
func requestLOD(t *testing.T, tn tenant, eu string, folder map[string][]byte) lodUpload {
	t.Helper()
	var files []any
	for _, p := range fixtures.LODPaths(folder) {
		files = append(files, map[string]any{"relativePath": p, "contentType": fixtures.LODContentType(p), "fileSize": len(folder[p])})
	}
	r := do(t, "POST", "/api/v1/uploads/lod-folder", tn.keys(eu), map[string]any{"files": files})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT`, r.Body["expiresAt"])
	up := lodUpload{folderKey: r.Body["folderKey"].(string), manifestURL: r.Body["manifestUrl"].(string),
		urls: map[string]string{}, keys: map[string]string{}}
	uploads := r.Body["uploads"].([]any)
	require.Len(t, uploads, len(folder))
	for _, u := range uploads {
		m := u.(map[string]any)
		p := m["relativePath"].(string)
		up.urls[p], up.keys[p] = m["uploadUrl"].(string), m["key"].(string)
		require.Equal(t, up.folderKey+"/"+p, up.keys[p], "every key is under folderKey")
	}
	require.Equal(t, env.Config.AssetBase()+"/"+up.folderKey+"/"+fixtures.LODManifest, up.manifestURL)
	return up
}

// putLOD uploads the files of folder named by paths.
func putLOD(t *testing.T, up lodUpload, folder map[string][]byte, paths []string) {
	t.Helper()
	for _, p := range paths {
		require.Equal(t, 200, putUpload(t, up.urls[p], folder[p], signedPut(fixtures.LODContentType(p))), p)
	}
}

func folderBytes(folder map[string][]byte) int {
	n := 0
	for _, b := range folder {
		n += len(b)
	}
	return n
}

func TestLODFolderUploadAndCommit(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "lodder", nil)
	folder := fixtures.LODFolder(300)
	require.GreaterOrEqual(t, len(folder), 3)
	up := requestLOD(t, a, "lodder", folder)
	putLOD(t, up, folder, fixtures.LODPaths(folder))

	r := do(t, "POST", "/api/v1/splats", a.keys("lodder"), map[string]any{
		"title": "streamed", "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey})
	require.Equal(t, 201, r.Status, string(r.Raw))
	sp := r.Body["splat"].(map[string]any)
	require.Equal(t, "lod", sp["splatType"])
	require.Equal(t, keyOf(t, up.manifestURL), keyOf(t, sp["splatUrl"].(string)))
	require.EqualValues(t, folderBytes(folder), sp["fileSizeBytes"], "a LOD scene is charged for its whole folder")

	g := do(t, "GET", "/api/v1/splats/"+sp["id"].(string), a.keys("lodder"), nil)
	require.Equal(t, 200, g.Status, string(g.Raw))
	d := g.Body["splat"].(map[string]any)
	require.Equal(t, up.folderKey, d["lodFolderKey"])
	require.Equal(t, "lod", d["splatType"])

	// The stored files are the uploaded ones.
	for _, p := range []string{fixtures.LODManifest, "0_0/means_l.webp"} {
		got, ctype, cache := getObject(t, up.keys[p])
		require.True(t, bytes.Equal(folder[p], got), p)
		require.Equal(t, fixtures.LODContentType(p), ctype)
		require.Equal(t, cacheControl, cache)
	}
}

func TestLODCommitIncompleteFolder(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "partial", nil)
	folder := fixtures.LODFolder(50)
	paths := fixtures.LODPaths(folder)
	up := requestLOD(t, a, "partial", folder)
	// Everything but two cells: the manifest is there, the folder is not.
	var skipped []string
	var sent []string
	for _, p := range paths {
		if strings.HasSuffix(p, ".webp") && len(skipped) < 2 {
			skipped = append(skipped, p)
			continue
		}
		sent = append(sent, p)
	}
	require.Len(t, skipped, 2)
	putLOD(t, up, folder, sent)
	commit := map[string]any{"title": "partial", "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey}
	issues := requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("partial"), commit), 400)
	want := fmt.Sprintf("2 of %d files were not uploaded", len(paths))
	require.True(t, issuesMention(issues, want), "issues %v should mention %q", issues, want)

	// Nothing was reserved, and once the rest arrives the same upload commits.
	u := do(t, "GET", "/api/v1/external-user/usage", a.keys("partial"), nil).Body["usage"].(map[string]any)
	require.EqualValues(t, 0, u["storage"].(map[string]any)["usedBytes"])
	putLOD(t, up, folder, skipped)
	r := do(t, "POST", "/api/v1/splats", a.keys("partial"), commit)
	require.Equal(t, 201, r.Status, string(r.Raw))
}

func TestLODCommitRejectsMismatchedFolderKey(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "mixer", nil)
	folder := fixtures.LODFolder(20)
	first, second := requestLOD(t, a, "mixer", folder), requestLOD(t, a, "mixer", folder)
	putLOD(t, first, folder, fixtures.LODPaths(folder))
	putLOD(t, second, folder, fixtures.LODPaths(folder))
	require.NotEqual(t, first.folderKey, second.folderKey)

	issues := requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("mixer"), map[string]any{
		"title": "mixed", "splatType": "lod", "splatUrl": first.manifestURL, "lodFolderKey": second.folderKey}), 400)
	require.True(t, issuesMention(issues, "lodFolderKey"), "%v", issues)
	// splatUrl must be the manifest, not another file of the folder.
	cell := env.Config.AssetBase() + "/" + first.keys["0_0/means_l.webp"]
	issues = requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("mixer"), map[string]any{
		"title": "cell", "splatType": "lod", "splatUrl": cell, "lodFolderKey": first.folderKey}), 400)
	require.True(t, issuesMention(issues, "splatUrl"), "%v", issues)
	// A LOD upload is not a single file, and lodFolderKey is required for 'lod'.
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("mixer"), map[string]any{"title": "file", "splatUrl": first.manifestURL}), 400)
	requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("mixer"), map[string]any{
		"title": "no key", "splatType": "lod", "splatUrl": first.manifestURL}), 400)

	// Each upload still commits with its own key.
	for _, up := range []lodUpload{first, second} {
		r := do(t, "POST", "/api/v1/splats", a.keys("mixer"), map[string]any{
			"title": "ok", "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey})
		require.Equal(t, 201, r.Status, string(r.Raw))
	}
}

// imageUpload is one image of a splat-images response.
type imageUpload struct{ uploadURL, fileURL string }

// requestImages asks for signed image URLs; thumb or depth may be nil.
func requestImages(t *testing.T, tn tenant, eu string, thumbType string, thumb, depth []byte) (th, dp *imageUpload) {
	t.Helper()
	body := map[string]any{}
	if thumb != nil {
		body["thumbnail"] = map[string]any{"contentType": thumbType, "fileSize": len(thumb)}
	}
	if depth != nil {
		body["depth"] = map[string]any{"contentType": "image/jpeg", "fileSize": len(depth)}
	}
	r := do(t, "POST", "/api/v1/uploads/splat-images", tn.keys(eu), body)
	require.Equal(t, 200, r.Status, string(r.Raw))
	for name, dst := range map[string]**imageUpload{"thumbnail": &th, "depth": &dp} {
		m, ok := r.Body[name].(map[string]any)
		if !ok {
			continue
		}
		require.Regexp(t, `^\d{4}-\d\d-\d\dT`, m["expiresAt"])
		*dst = &imageUpload{uploadURL: m["uploadUrl"].(string), fileURL: m["fileUrl"].(string)}
	}
	require.Equal(t, thumb != nil, th != nil)
	require.Equal(t, depth != nil, dp != nil)
	return th, dp
}

func TestImageUploadsCommitWithScene(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "painter", nil)
	depth := fixtures.JPEG(64, 36)
	for _, c := range []struct {
		contentType string
		data        []byte
	}{
		{"image/jpeg", fixtures.JPEG(160, 90)},
		{"image/png", fixtures.PNG(160, 90)},
		{"image/webp", fixtures.WebP(160, 90)},
	} {
		t.Run(c.contentType, func(t *testing.T) {
			th, dp := requestImages(t, a, "painter", c.contentType, c.data, depth)
			// The length is part of the signature: one byte more or less is refused.
			require.NotEqual(t, 200, putUpload(t, th.uploadURL, c.data[:len(c.data)-1], signedPut(c.contentType)))
			require.Equal(t, 200, putUpload(t, th.uploadURL, c.data, signedPut(c.contentType)))
			require.Equal(t, 200, putUpload(t, dp.uploadURL, depth, signedPut("image/jpeg")))

			scene := fixtures.Splat(100)
			splatURL := uploadFile(t, a, "painter", "s.splat", "application/splat", scene)
			r := do(t, "POST", "/api/v1/splats", a.keys("painter"), map[string]any{
				"title": "pictured", "splatUrl": splatURL, "imageUrl": th.fileURL, "thumbnailDepthUrl": dp.fileURL})
			require.Equal(t, 201, r.Status, string(r.Raw))
			sp := r.Body["splat"].(map[string]any)
			require.Equal(t, keyOf(t, th.fileURL), keyOf(t, sp["imageUrl"].(string)))
			require.EqualValues(t, len(scene)+len(c.data)+len(depth), sp["fileSizeBytes"], "images are charged with the scene")

			got, ctype, cache := getObject(t, keyOf(t, th.fileURL))
			require.True(t, bytes.Equal(c.data, got))
			require.Equal(t, c.contentType, ctype)
			require.Equal(t, cacheControl, cache)
			got, _, _ = getObject(t, keyOf(t, dp.fileURL))
			require.True(t, bytes.Equal(depth, got))
		})
	}
}

func TestImageDepthRequiresThumbnail(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "depthonly", nil)
	depth := fixtures.JPEG(32, 32)
	_, dp := requestImages(t, a, "depthonly", "", nil, depth)
	require.Equal(t, 200, putUpload(t, dp.uploadURL, depth, signedPut("image/jpeg")))
	splatURL := uploadFile(t, a, "depthonly", "s.splat", "application/splat", fixtures.Splat(10))
	issues := requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("depthonly"), map[string]any{
		"title": "depth only", "splatUrl": splatURL, "thumbnailDepthUrl": dp.fileURL}), 400)
	require.True(t, issuesMention(issues, "thumbnailDepthUrl"), "%v", issues)
	// The refused commit consumed nothing.
	r := do(t, "POST", "/api/v1/splats", a.keys("depthonly"), map[string]any{"title": "plain", "splatUrl": splatURL})
	require.Equal(t, 201, r.Status, string(r.Raw))
}

func TestImageOfAnotherCustomerForbidden(t *testing.T) {
	a, b := newTenant(t), newTenant(t)
	ensureCustomer(t, a, "owner", nil)
	ensureCustomer(t, a, "thief", nil)
	ensureCustomer(t, b, "owner", nil)
	thumb := fixtures.PNG(40, 30)
	th, _ := requestImages(t, a, "owner", "image/png", thumb, nil)
	require.Equal(t, 200, putUpload(t, th.uploadURL, thumb, signedPut("image/png")))

	// Another customer of the same integration, and the same customer id in another integration.
	for _, who := range []struct {
		tn tenant
		eu string
	}{{a, "thief"}, {b, "owner"}} {
		splatURL := uploadFile(t, who.tn, who.eu, "s.splat", "application/splat", fixtures.Splat(4))
		requireEnvelope(t, do(t, "POST", "/api/v1/splats", who.tn.keys(who.eu), map[string]any{
			"title": "stolen thumb", "splatUrl": splatURL, "imageUrl": th.fileURL}), 403)
		// The refused commit consumed nothing: the thief's own file still commits.
		r := do(t, "POST", "/api/v1/splats", who.tn.keys(who.eu), map[string]any{"title": "own", "splatUrl": splatURL})
		require.Equal(t, 201, r.Status, string(r.Raw))
	}
	// The owner still can.
	splatURL := uploadFile(t, a, "owner", "s.splat", "application/splat", fixtures.Splat(4))
	r := do(t, "POST", "/api/v1/splats", a.keys("owner"), map[string]any{"title": "mine", "splatUrl": splatURL, "imageUrl": th.fileURL})
	require.Equal(t, 201, r.Status, string(r.Raw))
}

// TestExpiredSignedURLRejected proves the store enforces a signed URL's expiry, which the
// one-hour (files, LOD) and five-minute (images) upload windows rely on.
func TestExpiredSignedURLRejected(t *testing.T) {
	st := store(t)
	ctx := context.Background()
	prefix := "test/expired/" + ids.New() + "/"
	body := fixtures.Splat(4)
	sign := func(key string, ttl time.Duration) string {
		req, err := st.Presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(key),
			ContentType: aws.String("application/splat"), CacheControl: aws.String(cacheControl)}, s3.WithPresignExpires(ttl))
		require.NoError(t, err)
		return req.URL
	}
	short := sign(prefix+"short.splat", time.Second)
	long := sign(prefix+"long.splat", time.Hour)
	time.Sleep(2500 * time.Millisecond)

	require.Equal(t, 403, putUpload(t, short, body, signedPut("application/splat")), "an expired signed URL must be refused")
	_, err := st.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(prefix + "short.splat")})
	require.Error(t, err, "nothing was stored through the expired URL")
	// Control: a URL signed at the same moment with a longer window still works.
	require.Equal(t, 200, putUpload(t, long, body, signedPut("application/splat")))
	_, err = st.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(prefix + "long.splat")})
	require.NoError(t, err)
}

// TestLODUppercaseCellExtension: the lod-folder request accepts cells named *.WEBP (validateLOD
// lower-cases the extension), but commit's verifyFolder looks for a cell with a case-sensitive
// ".webp" suffix, finds none and sniffs the empty key: a 500. Either answer below is fine.
func TestLODUppercaseCellExtension(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "upper", nil)
	lod := fixtures.LODFolder(4)
	folder := map[string][]byte{fixtures.LODManifest: lod[fixtures.LODManifest], "0_0/means_l.WEBP": lod["0_0/means_l.webp"]}
	var files []any
	for _, p := range fixtures.LODPaths(folder) {
		files = append(files, map[string]any{"relativePath": p, "contentType": fixtures.LODContentType(p), "fileSize": len(folder[p])})
	}
	r := do(t, "POST", "/api/v1/uploads/lod-folder", a.keys("upper"), map[string]any{"files": files})
	if r.Status == 400 {
		requireEnvelope(t, r, 400) // refusing upper-case extensions up front is fine too
		return
	}
	up := requestLOD(t, a, "upper", folder)
	putLOD(t, up, folder, fixtures.LODPaths(folder))
	r = do(t, "POST", "/api/v1/splats", a.keys("upper"), map[string]any{
		"title": "upper", "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey})
	require.Equal(t, 201, r.Status, string(r.Raw))
}

// TestImageSameURLTwice: one uploaded image cannot serve as both imageUrl and
// thumbnailDepthUrl (it would be charged twice), nor an image in the other one's role.
func TestImageSameURLTwice(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "twice", nil)
	depth := fixtures.JPEG(32, 32)
	_, dp := requestImages(t, a, "twice", "", nil, depth)
	require.Equal(t, 200, putUpload(t, dp.uploadURL, depth, signedPut("image/jpeg")))
	scene := fixtures.Splat(10)
	splatURL := uploadFile(t, a, "twice", "s.splat", "application/splat", scene)
	r := do(t, "POST", "/api/v1/splats", a.keys("twice"), map[string]any{
		"title": "twice", "splatUrl": splatURL, "imageUrl": dp.fileURL, "thumbnailDepthUrl": dp.fileURL})
	require.True(t, issuesMention(requireEnvelope(t, r, 400), "thumbnailDepthUrl"))
	// A depth image is not a thumbnail.
	r = do(t, "POST", "/api/v1/splats", a.keys("twice"), map[string]any{"title": "role", "splatUrl": splatURL, "imageUrl": dp.fileURL})
	require.True(t, issuesMention(requireEnvelope(t, r, 400), "imageUrl"))
	r = do(t, "POST", "/api/v1/splats", a.keys("twice"), map[string]any{"title": "ok", "splatUrl": splatURL})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.EqualValues(t, len(scene), r.Body["splat"].(map[string]any)["fileSizeBytes"])
}

// TestUnusedImageOfCommittedUploadIsRemoved: an images upload is spent by the commit that uses
// it, so an image it signed but the scene does not reference is deleted rather than orphaned.
func TestUnusedImageOfCommittedUploadIsRemoved(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "half", nil)
	thumb, depth := fixtures.PNG(16, 16), fixtures.JPEG(16, 16)
	th, dp := requestImages(t, a, "half", "image/png", thumb, depth)
	require.Equal(t, 200, putUpload(t, th.uploadURL, thumb, signedPut("image/png")))
	require.Equal(t, 200, putUpload(t, dp.uploadURL, depth, signedPut("image/jpeg")))
	splatURL := uploadFile(t, a, "half", "s.splat", "application/splat", fixtures.Splat(4))
	r := do(t, "POST", "/api/v1/splats", a.keys("half"), map[string]any{"title": "half", "splatUrl": splatURL, "imageUrl": th.fileURL})
	require.Equal(t, 201, r.Status, string(r.Raw))
	st := store(t)
	require.Eventually(t, func() bool {
		_, err := st.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(keyOf(t, dp.fileURL))})
		return err != nil
	}, 10*time.Second, 50*time.Millisecond, "the unused depth image is deleted")
	_, err := st.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(objectkeys.Sealed(keyOf(t, th.fileURL)))})
	require.NoError(t, err, "the thumbnail stays (its sealed copy, which the scene serves)")
}
