//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/scenes"
)

// assetResponse is one anonymous request to an asset URL.
type assetResponse struct {
	status int
	header http.Header
	body   []byte
}

// fetchAsset sends an anonymous request (no key, no session) with the given headers.
func fetchAsset(t *testing.T, method, u string, headers map[string]string) assetResponse {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return assetResponse{status: resp.StatusCode, header: resp.Header, body: body}
}

// requireAssetNotFound checks a refusal is the 404 envelope, which tells nothing of the scene.
func requireAssetNotFound(t *testing.T, r assetResponse) {
	t.Helper()
	require.Equal(t, 404, r.status, string(r.body))
	var env map[string]any
	require.NoError(t, json.Unmarshal(r.body, &env), string(r.body))
	require.Equal(t, "error", env["status"])
}

// unsignedOf is the stable, unsigned form of a (signed) asset URL.
func unsignedOf(t *testing.T, u string) string {
	t.Helper()
	i := strings.Index(u, "/assets/s/")
	require.GreaterOrEqual(t, i, 0, u)
	rest := u[i+len("/assets/s/"):]
	_, key, ok := strings.Cut(rest, "/")
	require.True(t, ok, u)
	return u[:i] + "/assets/" + key
}

// tokenExpiry reads the expiry of a signed asset URL's token.
func tokenExpiry(t *testing.T, u string) time.Time {
	t.Helper()
	i := strings.Index(u, "/assets/s/")
	require.GreaterOrEqual(t, i, 0, u)
	tok, _, _ := strings.Cut(u[i+len("/assets/s/"):], "/")
	e, _, ok := strings.Cut(tok, ".")
	require.True(t, ok, u)
	n, err := strconv.ParseInt(e, 36, 64)
	require.NoError(t, err)
	return time.Unix(n, 0)
}

// TestAssetBucketIsNotAnonymouslyReadable: the object store's own URL of a scene file answers
// 403 to an anonymous GET, even for a public, embeddable scene (contract item 9).
func TestAssetBucketIsNotAnonymouslyReadable(t *testing.T) {
	a := newTenant(t)
	sp := commitScene(t, a, "bucket", 3)
	patchSplat(t, a, "bucket", sp["id"].(string), map[string]any{"visibility": "public"})
	key := keyOf(t, sp["splatUrl"].(string))
	direct := strings.TrimSuffix(env.Config.S3Endpoint, "/") + "/" + env.Config.S3Bucket + "/" + key
	r := fetchAsset(t, "GET", direct, nil)
	require.Equal(t, 403, r.status, string(r.body))
	require.Equal(t, 403, fetchAsset(t, "GET", env.Config.AssetBase()+"/"+key, nil).status)
}

// TestAssetPublicSceneServedThroughTheService: a public, embeddable scene's splatUrl is a
// stable URL of the gateway that anyone may read: 200 with the stored type, validators and a
// short public max-age, Range 206, HEAD, conditional 304, CORS for another origin.
func TestAssetPublicSceneServedThroughTheService(t *testing.T) {
	a := newTenant(t)
	data := splatBytes(40)
	ensureCustomer(t, a, "publisher", nil)
	fileURL := uploadSplat(t, a, "publisher", data)
	r := do(t, "POST", "/api/v1/splats", a.keys("publisher"), map[string]any{"title": "open", "splatUrl": fileURL, "visibility": "public"})
	require.Equal(t, 201, r.Status, string(r.Raw))
	u := splatOf(r)["splatUrl"].(string)
	require.Equal(t, env.URL+"/assets/"+keyOf(t, fileURL), u, "a public scene's URL is stable and unsigned")
	g := do(t, "GET", splatPath(splatOf(r)["id"].(string)), a.keys("publisher"), nil)
	require.Equal(t, u, splatOf(g)["splatUrl"])

	full := fetchAsset(t, "GET", u, map[string]string{"Origin": "https://host.example"})
	require.Equal(t, 200, full.status, string(full.body))
	require.True(t, bytes.Equal(data, full.body))
	require.Equal(t, "application/splat", full.header.Get("Content-Type"))
	require.Equal(t, strconv.Itoa(len(data)), full.header.Get("Content-Length"))
	require.Equal(t, "*", full.header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, full.header.Get("Access-Control-Expose-Headers"), "Content-Range")
	require.NotEmpty(t, full.header.Get("ETag"))
	require.NotEmpty(t, full.header.Get("Last-Modified"))
	require.Equal(t, "bytes", full.header.Get("Accept-Ranges"))
	require.Equal(t, "nosniff", full.header.Get("X-Content-Type-Options"))
	cc := full.header.Get("Cache-Control")
	require.Contains(t, cc, "public")
	age, err := strconv.Atoi(strings.TrimPrefix(cc[strings.Index(cc, "max-age="):], "max-age="))
	require.NoError(t, err, cc)
	require.LessOrEqual(t, age, 60)

	part := fetchAsset(t, "GET", u, map[string]string{"Range": "bytes=32-95"})
	require.Equal(t, 206, part.status, string(part.body))
	require.Equal(t, data[32:96], part.body)
	require.Equal(t, "bytes 32-95/"+strconv.Itoa(len(data)), part.header.Get("Content-Range"))

	head := fetchAsset(t, "HEAD", u, nil)
	require.Equal(t, 200, head.status)
	require.Empty(t, head.body)
	require.Equal(t, strconv.Itoa(len(data)), head.header.Get("Content-Length"))
	require.Equal(t, full.header.Get("ETag"), head.header.Get("ETag"))

	same := fetchAsset(t, "GET", u, map[string]string{"If-None-Match": full.header.Get("ETag")})
	require.Equal(t, 304, same.status)
	require.Empty(t, same.body)

	pre := fetchAsset(t, "OPTIONS", u, map[string]string{"Origin": "https://host.example",
		"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "range"})
	require.Equal(t, 204, pre.status)
	require.Equal(t, "*", pre.header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, strings.ToLower(pre.header.Get("Access-Control-Allow-Headers")), "range")

	// Not an object of any scene, a missing object: 404. A path out of the key space is not
	// canonical and refused before any route (TestCanonicalPaths): 400.
	requireAssetNotFound(t, fetchAsset(t, "GET", u+"x", nil))
	require.Equal(t, 400, fetchAsset(t, "GET", env.URL+"/assets/../../etc/passwd", nil).status)
	requireAssetNotFound(t, fetchAsset(t, "GET", env.URL+"/assets/i/x/u/y/f/z/scene.splat", nil))
	// The asset route takes no writes.
	require.GreaterOrEqual(t, fetchAsset(t, "DELETE", u, nil).status, 400)
}

// TestAssetPrivateSceneNeedsTheSignedURL: a private scene's URLs in API answers (REST get and
// list, the embed API of a session that may see it) are signed for at least 15 minutes; the
// unsigned form, a forged token and a token of another folder answer 404.
func TestAssetPrivateSceneNeedsTheSignedURL(t *testing.T) {
	a := newTenant(t)
	sp := commitScene(t, a, "hermit", 5)
	id := sp["id"].(string)
	signed := sp["splatUrl"].(string)
	require.True(t, strings.HasPrefix(signed, env.URL+"/assets/s/"), signed)
	require.GreaterOrEqual(t, time.Until(tokenExpiry(t, signed)), 15*time.Minute)

	ok := fetchAsset(t, "GET", signed, nil)
	require.Equal(t, 200, ok.status, string(ok.body))
	require.Equal(t, splatBytes(5), ok.body)
	require.Contains(t, ok.header.Get("Cache-Control"), "private")
	part := fetchAsset(t, "GET", signed, map[string]string{"Range": "bytes=0-31"})
	require.Equal(t, 206, part.status)
	require.Len(t, part.body, 32)

	requireAssetNotFound(t, fetchAsset(t, "GET", unsignedOf(t, signed), nil))
	i := strings.Index(signed, "/assets/s/") + len("/assets/s/")
	tok, key, _ := strings.Cut(signed[i:], "/")
	forged := tok[:len(tok)-2] + "AA"
	if forged == tok {
		forged = tok[:len(tok)-2] + "BB"
	}
	requireAssetNotFound(t, fetchAsset(t, "GET", env.URL+"/assets/s/"+forged+"/"+key, nil))
	// A token of another scene's folder does not open this one.
	other := commitScene(t, a, "hermit", 2)["splatUrl"].(string)
	otherTok, _, _ := strings.Cut(other[i:], "/")
	requireAssetNotFound(t, fetchAsset(t, "GET", env.URL+"/assets/s/"+otherTok+"/"+key, nil))

	// The list and the embed API of a session scoped to the owner hand out working URLs too.
	l := do(t, "GET", "/api/v1/splats", a.keys("hermit"), nil)
	require.Equal(t, 200, l.Status, string(l.Raw))
	found := false
	for _, it := range l.Body["splats"].([]any) {
		item := it.(map[string]any)
		if item["id"] == id {
			found = true
			require.Equal(t, 200, fetchAsset(t, "GET", item["splatUrl"].(string), nil).status)
		}
	}
	require.True(t, found)
	tok2 := mintToken(t, a, "hermit", map[string]any{"type": "viewer"})
	e := do(t, "GET", "/api/embed/splats/"+id, sessionHeaders(tok2), nil)
	require.Equal(t, 200, e.Status, string(e.Raw))
	eu := splatOf(e)["splatUrl"].(string)
	require.Contains(t, eu, "/assets/s/")
	require.Equal(t, 200, fetchAsset(t, "GET", eu, nil).status)

	// Public but not embeddable is not open to everyone either.
	patchSplat(t, a, "hermit", id, map[string]any{"visibility": "public", "allowEmbed": false})
	g := do(t, "GET", splatPath(id), a.keys("hermit"), nil)
	require.Contains(t, splatOf(g)["splatUrl"], "/assets/s/")
	requireAssetNotFound(t, fetchAsset(t, "GET", unsignedOf(t, signed), nil))
}

// TestAssetArchivedAndDeletedScenesAreGoneWithin60s: once the billing lifecycle archives a
// scene, or the scene is deleted, its asset URLs (public or signed) answer 404 within 60 s.
func TestAssetArchivedAndDeletedScenesAreGoneWithin60s(t *testing.T) {
	a := newTenant(t)
	const who = "lapsed"
	keep := commitScene(t, a, who, 1)["id"].(string)
	open := commitScene(t, a, who, 2)
	closed := commitScene(t, a, who, 3)
	gone := commitScene(t, a, who, 4)
	patchSplat(t, a, who, open["id"].(string), map[string]any{"visibility": "public"})
	patchSplat(t, a, who, gone["id"].(string), map[string]any{"visibility": "public"})
	openURL := splatOf(do(t, "GET", splatPath(open["id"].(string)), a.keys(who), nil))["splatUrl"].(string)
	goneURL := splatOf(do(t, "GET", splatPath(gone["id"].(string)), a.keys(who), nil))["splatUrl"].(string)
	closedURL := closed["splatUrl"].(string)
	for _, u := range []string{openURL, closedURL, goneURL} {
		require.Equal(t, 200, fetchAsset(t, "GET", u, nil).status, u)
	}

	r := do(t, "DELETE", splatPath(gone["id"].(string)), a.keys(who), nil)
	require.Less(t, r.Status, 300, string(r.Raw))
	lifecyclePut(t, a, who, map[string]any{"billingState": "suspended", "keepSplatIds": []string{keep},
		"limitBytes": 32, "maxSplats": 1})
	requireArchived(t, a, who, open["id"].(string), false)
	requireArchived(t, a, who, closed["id"].(string), false)

	start := time.Now()
	require.Eventually(t, func() bool {
		for _, u := range []string{openURL, closedURL, goneURL} {
			if fetchAsset(t, "GET", u, nil).status != 404 {
				return false
			}
		}
		return true
	}, 60*time.Second, 500*time.Millisecond)
	t.Logf("archived and deleted scenes' assets refused after %s", time.Since(start).Round(time.Millisecond))
	requireAssetNotFound(t, fetchAsset(t, "GET", closedURL, map[string]string{"Range": "bytes=0-9"}))
	require.Equal(t, 404, fetchAsset(t, "HEAD", openURL, nil).status)
}

// TestAssetLODTilesLoadThroughTheSignedManifest: a private LOD scene's splatUrl is its signed
// manifest; every file of the folder, named relative to the manifest as the viewer resolves it,
// loads through the same signature; the folder of another scene does not.
func TestAssetLODTilesLoadThroughTheSignedManifest(t *testing.T) {
	a := newTenant(t)
	folder := fixtures.LODFolder(300)
	ensureCustomer(t, a, "streamer", nil)
	up := requestLOD(t, a, "streamer", folder)
	putLOD(t, up, folder, fixtures.LODPaths(folder))
	r := do(t, "POST", "/api/v1/splats", a.keys("streamer"), map[string]any{
		"title": "streamed", "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey})
	require.Equal(t, 201, r.Status, string(r.Raw))
	manifest := splatOf(r)["splatUrl"].(string)
	require.Contains(t, manifest, "/assets/s/")
	require.True(t, strings.HasSuffix(manifest, "/"+fixtures.LODManifest), manifest)
	m := fetchAsset(t, "GET", manifest, nil)
	require.Equal(t, 200, m.status, string(m.body))
	require.Equal(t, folder[fixtures.LODManifest], m.body)
	require.Equal(t, "application/json", m.header.Get("Content-Type"))
	base, err := url.Parse(manifest)
	require.NoError(t, err)
	for _, p := range fixtures.LODPaths(folder) {
		ref, err := url.Parse(p)
		require.NoError(t, err)
		got := fetchAsset(t, "GET", base.ResolveReference(ref).String(), nil)
		require.Equal(t, 200, got.status, p)
		require.Equal(t, folder[p], got.body, p)
	}
	requireAssetNotFound(t, fetchAsset(t, "GET", unsignedOf(t, manifest), nil))
}

// TestAssetURLTokenShape pins the route's constants the documentation promises.
func TestAssetURLTokenShape(t *testing.T) {
	require.LessOrEqual(t, scenes.AssetMaxAge, 60)
	require.GreaterOrEqual(t, scenes.AssetURLLifetime, 15*time.Minute)
	require.LessOrEqual(t, scenes.AssetDecisionTTL, 30*time.Second)
}

// TestAssetCloneServesItsOwnCopy: a clone's files live in its own folder (named by the new
// scene), and its signed URLs serve the copy; the source's URLs keep working.
func TestAssetCloneServesItsOwnCopy(t *testing.T) {
	a := newTenant(t)
	src := commitScene(t, a, "cloner", 6)
	r := do(t, "POST", clonePath(src["id"].(string)), a.keys("cloner"), nil)
	sp := requireCloneSuccess(t, r, 201, src)
	u := sp["splatUrl"].(string)
	require.Contains(t, u, "/assets/s/")
	require.Contains(t, keyOf(t, u), "/clone/"+sp["id"].(string)+"/")
	got := fetchAsset(t, "GET", u, nil)
	require.Equal(t, 200, got.status, string(got.body))
	require.Equal(t, splatBytes(6), got.body)
	require.Equal(t, 200, fetchAsset(t, "GET", src["splatUrl"].(string), nil).status)
}

// TestAssetRevokedIntegrationIsGone: revoking an integration stops its public files within the
// decision cache's bound.
func TestAssetRevokedIntegrationIsGone(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "revoked", nil)
	fileURL := uploadSplat(t, a, "revoked", splatBytes(2))
	r := do(t, "POST", "/api/v1/splats", a.keys("revoked"), map[string]any{"title": "open", "splatUrl": fileURL, "visibility": "public"})
	require.Equal(t, 201, r.Status, string(r.Raw))
	u := splatOf(r)["splatUrl"].(string)
	require.Equal(t, 200, fetchAsset(t, "GET", u, nil).status)
	require.Equal(t, 200, do(t, "POST", "/admin/v1/integrations/"+a.IntegrationID+"/revoke", admin(), nil).Status)
	require.Eventually(t, func() bool { return fetchAsset(t, "GET", u, nil).status == 404 },
		scenes.AssetDecisionTTL+5*time.Second, 250*time.Millisecond)
}
