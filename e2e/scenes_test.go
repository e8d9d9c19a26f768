//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/testenv"
)

const isoRE = `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`

var sceneSeq atomic.Int64

// commitSceneE is commitScene (upload_test.go) for goroutines other than the test's: it reports
// failures as errors. It provisions eu, uploads a .splat of size bytes (a multiple of 32)
// through a signed URL and commits it; it returns the response's splat item.
func commitSceneE(tn tenant, eu string, size int) (map[string]any, error) {
	h := tn.keys(eu)
	call := func(method, path string, body any, want int) (*testenv.Response, error) {
		r, err := testenv.Do(env.URL, method, path, h, body)
		if err != nil {
			return nil, err
		}
		if r.Status != want {
			return nil, fmt.Errorf("%s %s: %d %s", method, path, r.Status, r.Raw)
		}
		return r, nil
	}
	if _, err := call("PUT", "/api/v1/external-user", map[string]any{}, 200); err != nil {
		return nil, err
	}
	up, err := call("POST", "/api/v1/uploads/splat-file",
		map[string]any{"fileName": "a.splat", "contentType": "application/splat", "fileSize": size}, 200)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest("PUT", up.Body["uploadUrl"].(string), bytes.NewReader(splatBytes(size/32)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/splat")
	req.Header.Set("Cache-Control", "public, max-age=31536000, immutable")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("signed upload: %d", resp.StatusCode)
	}
	r, err := call("POST", "/api/v1/splats", map[string]any{
		"title": fmt.Sprintf("scene %d", sceneSeq.Add(1)), "splatUrl": up.Body["fileUrl"],
	}, 201)
	if err != nil {
		return nil, err
	}
	return r.Body["splat"].(map[string]any), nil
}

// newScene provisions eu and commits a scene of records×32 bytes through commitScene
// (upload_test.go); it returns the committed splat item.
func newScene(t *testing.T, tn tenant, eu string, records int) map[string]any {
	t.Helper()
	r := do(t, "PUT", "/api/v1/external-user", tn.keys(eu), map[string]any{})
	require.Equal(t, 200, r.Status, string(r.Raw))
	return commitScene(t, tn, eu, records)
}

func splatPath(id string) string { return "/api/v1/splats/" + id }

func splatOf(r *testenv.Response) map[string]any { return r.Body["splat"].(map[string]any) }

// exec runs SQL against the product database, for states no endpoint makes yet (archived
// scenes, clones, view counts).
func exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := env.Process.DB.Pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// updateScene changes one scene row the way an endpoint not built yet would (archive, views,
// clone state) and, like every writer of scenes, announces it so the scene caches drop it. It
// waits until this process's cache has heard, so the next read sees the change.
func updateScene(t *testing.T, id, set string, args ...any) {
	t.Helper()
	before := env.Process.Scenes.CacheNotices()
	exec(t, `WITH s AS (UPDATE scenes SET `+set+` WHERE id = $1 RETURNING integration_id, id)
		SELECT pg_notify('splathost_scenes', integration_id || ':' || id) FROM s`, append([]any{id}, args...)...)
	require.Eventually(t, func() bool { return env.Process.Scenes.CacheNotices() > before }, 5*time.Second, 5*time.Millisecond)
}

// requireItemShape checks every field of the spec's list-item shape and its JSON type.
func requireItemShape(t *testing.T, it map[string]any) {
	t.Helper()
	require.Regexp(t, `^[0-9a-f]{24}$`, it["id"])
	for _, k := range []string{"title", "description", "imageUrl", "splatUrl", "externalUserId", "productSlug"} {
		require.IsType(t, "", it[k], k)
	}
	require.Contains(t, []any{"private", "public"}, it["visibility"])
	require.Contains(t, []any{"file", "lod"}, it["splatType"])
	for _, k := range []string{"allowEmbed", "allowComments", "allowReactions", "allowClone", "isOwner", "featured"} {
		require.IsType(t, true, it[k], k)
	}
	for _, k := range []string{"viewCount", "likeCount", "fileSizeBytes"} {
		require.IsType(t, float64(0), it[k], k)
	}
	require.Contains(t, it, "remixedFrom")
	if it["remixedFrom"] != nil {
		require.IsType(t, map[string]any{}, it["remixedFrom"])
	}
	require.Contains(t, it, "featuredAt")
	if it["featuredAt"] != nil {
		require.Regexp(t, isoRE, it["featuredAt"])
	}
	require.Regexp(t, isoRE, it["createdAt"])
	require.Regexp(t, isoRE, it["updatedAt"])
}

func TestSceneGetShapeAndScope(t *testing.T) {
	a, other := newTenant(t), newTenant(t)
	sc := newScene(t, a, "alice", 2)
	newScene(t, a, "bob", 1) // provisions bob
	id := sc["id"].(string)

	r := do(t, "GET", splatPath(id), a.keys("alice"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	d := splatOf(r)
	requireItemShape(t, d)
	require.Equal(t, id, d["id"])
	require.Equal(t, sc["title"], d["title"])
	require.Equal(t, "", d["description"])
	require.Equal(t, "", d["imageUrl"])
	require.Equal(t, keyOf(t, sc["splatUrl"].(string)), keyOf(t, d["splatUrl"].(string)))
	require.True(t, strings.HasPrefix(d["splatUrl"].(string), env.URL+"/assets/s/"), "a private scene's URL is signed")
	require.Equal(t, "private", d["visibility"])
	require.Equal(t, true, d["allowEmbed"])
	require.Equal(t, true, d["allowComments"])
	require.Equal(t, true, d["allowReactions"])
	require.Equal(t, false, d["allowClone"])
	require.Nil(t, d["remixedFrom"])
	require.Equal(t, "file", d["splatType"])
	require.Equal(t, "alice", d["externalUserId"])
	require.Equal(t, a.ProductSlug, d["productSlug"])
	require.Equal(t, true, d["isOwner"])
	require.EqualValues(t, 0, d["viewCount"])
	require.EqualValues(t, 0, d["likeCount"])
	require.EqualValues(t, 64, d["fileSizeBytes"])
	require.Equal(t, false, d["featured"])
	require.Nil(t, d["featuredAt"])
	require.Equal(t, sc["createdAt"], d["createdAt"])
	// The single-scene fetch adds levelData and lodFolderKey.
	require.Contains(t, d, "levelData")
	require.Contains(t, d, "lodFolderKey")
	require.Nil(t, d["lodFolderKey"])
	// The commit answered the same item.
	for k, v := range sc {
		require.Equal(t, v, d[k], k)
	}

	// Without EU the integration sees the scene but owns nothing personally.
	r = do(t, "GET", splatPath(id), a.keys(""), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, false, splatOf(r)["isOwner"])
	require.Equal(t, "alice", splatOf(r)["externalUserId"])

	// Another customer cannot see a private scene, nor anyone outside the integration.
	requireEnvelope(t, do(t, "GET", splatPath(id), a.keys("bob"), nil), 404)
	requireEnvelope(t, do(t, "GET", splatPath(id), a.keys("nobody-yet"), nil), 404)
	requireEnvelope(t, do(t, "GET", splatPath(id), other.keys(""), nil), 404)
	requireEnvelope(t, do(t, "GET", splatPath(id), other.keys("alice"), nil), 404)

	// Once public, other customers of the integration see it, not as its owner.
	r = do(t, "PATCH", splatPath(id), a.keys("alice"), map[string]any{"visibility": "public"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	r = do(t, "GET", splatPath(id), a.keys("bob"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, false, splatOf(r)["isOwner"])
	require.Equal(t, "alice", splatOf(r)["externalUserId"])
	requireEnvelope(t, do(t, "GET", splatPath(id), other.keys("alice"), nil), 404)
	requireEnvelope(t, do(t, "GET", splatPath(id), other.keys(""), nil), 404)

	// Public or not, only the owner changes or deletes it; other integrations cannot even
	// feature it. None of these disclose that it exists.
	requireEnvelope(t, do(t, "PATCH", splatPath(id), a.keys("bob"), map[string]any{"title": "mine"}), 404)
	requireEnvelope(t, do(t, "DELETE", splatPath(id), a.keys("bob"), nil), 404)
	requireEnvelope(t, do(t, "PATCH", splatPath(id), other.keys("alice"), map[string]any{"title": "mine"}), 404)
	requireEnvelope(t, do(t, "PATCH", splatPath(id), other.keys(""), map[string]any{"featured": true}), 404)
	requireEnvelope(t, do(t, "DELETE", splatPath(id), other.keys("alice"), nil), 404)
	require.Equal(t, 200, do(t, "GET", splatPath(id), a.keys("alice"), nil).Status, "still there")

	// Ids: anything but 24 hex characters, or an unknown id, is a 404.
	for _, bad := range []string{"xyz", "0123456789abcdef0123456", "0123456789abcdef012345678", "zzzzzzzzzzzzzzzzzzzzzzzz", "0123456789abcdef01234567"} {
		requireEnvelope(t, do(t, "GET", splatPath(bad), a.keys(""), nil), 404)
		requireEnvelope(t, do(t, "PATCH", splatPath(bad), a.keys("alice"), map[string]any{"title": "x"}), 404)
		requireEnvelope(t, do(t, "DELETE", splatPath(bad), a.keys("alice"), nil), 404)
	}
	// Uppercase hex names the same scene.
	require.Equal(t, 200, do(t, "GET", splatPath(strings.ToUpper(id)), a.keys("alice"), nil).Status)

	// Credentials.
	requireEnvelope(t, do(t, "GET", splatPath(id), nil, nil), 401)
	requireEnvelope(t, do(t, "GET", "/api/v1/splats", nil, nil), 401)
	requireEnvelope(t, do(t, "PATCH", splatPath(id), nil, map[string]any{"title": "x"}), 401)
	requireEnvelope(t, do(t, "DELETE", splatPath(id), nil, nil), 401)
	// Metadata updates and deletes need EU.
	requireEnvelope(t, do(t, "PATCH", splatPath(id), a.keys(""), map[string]any{"title": "x"}), 400)
	requireEnvelope(t, do(t, "DELETE", splatPath(id), a.keys(""), nil), 400)

	// Archived (retained) scenes are gone from every surface.
	updateScene(t, id, `archived_at = now()`)
	requireEnvelope(t, do(t, "GET", splatPath(id), a.keys("alice"), nil), 404)
	requireEnvelope(t, do(t, "GET", splatPath(id), a.keys(""), nil), 404)
	requireEnvelope(t, do(t, "PATCH", splatPath(id), a.keys("alice"), map[string]any{"title": "x"}), 404)
	requireEnvelope(t, do(t, "PATCH", splatPath(id), a.keys(""), map[string]any{"featured": false}), 404)
	requireEnvelope(t, do(t, "DELETE", splatPath(id), a.keys("alice"), nil), 404)
	r = do(t, "GET", "/api/v1/splats", a.keys("alice"), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Empty(t, r.Body["splats"])
}

// listPage is one page's ids and its nextCursor ("" for null); it checks every item's shape.
func listPage(t *testing.T, tn tenant, eu, query string) ([]string, string) {
	t.Helper()
	r := do(t, "GET", "/api/v1/splats?"+query, tn.keys(eu), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	require.Contains(t, r.Body, "nextCursor")
	items := r.Body["splats"].([]any)
	out := make([]string, len(items))
	for i, it := range items {
		m := it.(map[string]any)
		requireItemShape(t, m)
		require.NotContains(t, m, "levelData", "list items are the item shape")
		require.Equal(t, eu != "" && m["externalUserId"] == eu, m["isOwner"])
		out[i] = m["id"].(string)
	}
	next := ""
	if r.Body["nextCursor"] != nil {
		next = r.Body["nextCursor"].(string)
		require.NotEmpty(t, next)
	}
	return out, next
}

// walk lists every page of query and returns all ids in order; between pages it calls between.
func walk(t *testing.T, tn tenant, eu, query string, between func()) []string {
	t.Helper()
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 500, "the walk must end")
		q := query
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		ids, next := listPage(t, tn, eu, q)
		all = append(all, ids...)
		if next == "" {
			return all
		}
		cursor = next
		if between != nil {
			between()
		}
	}
}

func TestListSplatsPaginationUnderConcurrentInserts(t *testing.T) {
	a := newTenant(t)
	var existing []string
	for i := 0; i < 7; i++ {
		existing = append(existing, newScene(t, a, "pager", 1)["id"].(string))
	}
	other := newScene(t, a, "someone-else", 1)["id"].(string)

	// Another goroutine commits a scene between every two pages (and the walk waits for it,
	// so every page boundary really has an insert behind it).
	insert, done := make(chan struct{}), make(chan error)
	go func() {
		for range insert {
			_, err := commitSceneE(a, "pager", 32)
			done <- err
		}
	}()
	defer close(insert)
	inserted := 0
	between := func() {
		insert <- struct{}{}
		require.NoError(t, <-done)
		inserted++
	}

	for _, dir := range []string{"desc", "asc"} {
		for _, sort := range []string{"createdAt", "updatedAt", "viewCount", "featuredAt"} {
			// Three per page: an ascending walk sees the inserts behind it, and must still
			// gain on them.
			ids := walk(t, a, "pager", "limit=3&sort="+sort+"&dir="+dir, between)
			seen := map[string]int{}
			for _, id := range ids {
				seen[id]++
				require.Equal(t, 1, seen[id], "%s %s: %s visited twice", sort, dir, id)
			}
			for _, id := range existing {
				require.Equal(t, 1, seen[id], "%s %s: %s must be visited exactly once", sort, dir, id)
			}
			require.NotContains(t, seen, other, "with EU only that customer's scenes")
		}
	}
	require.Greater(t, inserted, 8*3)
	total := len(existing) + inserted

	// createdAt desc is newest first; the default limit is 20.
	ids, next := listPage(t, a, "pager", "")
	require.Len(t, ids, min(20, total))
	require.Equal(t, total > 20, next != "")
	ids = walk(t, a, "pager", "limit=100", nil)
	require.Len(t, ids, total)
	for i, id := range existing {
		require.Equal(t, id, ids[len(ids)-1-i])
	}
	// Without EU every customer's scenes are listed.
	all := walk(t, a, "", "limit=7", nil)
	require.Len(t, all, total+1)
	require.Contains(t, all, other)

	// A customer with no scenes (or no record) lists nothing.
	ids, next = listPage(t, a, "no-such-customer", "")
	require.Empty(t, ids)
	require.Equal(t, "", next)
}

func TestListSplatsSortFilterAndBadParams(t *testing.T) {
	a := newTenant(t)
	var s []string
	for i := 0; i < 4; i++ {
		s = append(s, newScene(t, a, "sorter", 1)["id"].(string))
	}
	// View counts (no view endpoint yet): s1=5, s3=5, s0=1, s2=0; ties break on id.
	for id, n := range map[string]int{s[0]: 1, s[1]: 5, s[3]: 5} {
		updateScene(t, id, `view_count = $2`, n)
	}
	hi1, hi2 := s[1], s[3]
	if hi1 < hi2 {
		hi1, hi2 = hi2, hi1
	}
	ids, _ := listPage(t, a, "sorter", "sort=viewCount")
	require.Equal(t, []string{hi1, hi2, s[0], s[2]}, ids)
	ids, _ = listPage(t, a, "sorter", "sort=viewCount&dir=asc")
	require.Equal(t, []string{s[2], s[0], hi2, hi1}, ids)
	require.Equal(t, []string{s[2], s[0], hi2, hi1}, walk(t, a, "sorter", "sort=viewCount&dir=asc&limit=1", nil))

	ids, _ = listPage(t, a, "sorter", "dir=asc")
	require.Equal(t, s, ids, "createdAt ascending is commit order")

	// updatedAt follows edits.
	time.Sleep(5 * time.Millisecond)
	require.Equal(t, 200, do(t, "PATCH", splatPath(s[0]), a.keys("sorter"), map[string]any{"title": "edited"}).Status)
	ids, _ = listPage(t, a, "sorter", "sort=updatedAt")
	require.Equal(t, s[0], ids[0])
	ids, _ = listPage(t, a, "sorter", "sort=updatedAt&dir=asc")
	require.Equal(t, s[0], ids[3])

	// Featuring s2, then s0: the curated set, newest featuring first.
	for _, id := range []string{s[2], s[0]} {
		require.Equal(t, 200, do(t, "PATCH", splatPath(id), a.keys("sorter"), map[string]any{"visibility": "public"}).Status)
		r := do(t, "PATCH", splatPath(id), a.keys(""), map[string]any{"featured": true})
		require.Equal(t, 200, r.Status, string(r.Raw))
		time.Sleep(5 * time.Millisecond)
	}
	ids, _ = listPage(t, a, "", "featured=true&sort=featuredAt&dir=desc")
	require.Equal(t, []string{s[0], s[2]}, ids)
	require.Equal(t, []string{s[0], s[2]}, walk(t, a, "", "featured=true&sort=featuredAt&dir=desc&limit=1", nil))
	ids, _ = listPage(t, a, "", "featured=true&sort=featuredAt&dir=asc")
	require.Equal(t, []string{s[2], s[0]}, ids)
	ids, _ = listPage(t, a, "sorter", "featured=false&dir=asc")
	require.Equal(t, []string{s[1], s[3]}, ids)
	// Without the filter, never-featured scenes sort as the oldest featuredAt (by id among them).
	lo1, lo2 := s[1], s[3]
	if lo1 < lo2 {
		lo1, lo2 = lo2, lo1
	}
	ids, _ = listPage(t, a, "", "sort=featuredAt")
	require.Equal(t, []string{s[0], s[2], lo1, lo2}, ids)
	require.Equal(t, []string{lo2, lo1, s[2], s[0]}, walk(t, a, "", "sort=featuredAt&dir=asc&limit=1", nil))
	// An unfeatured scene keeps its featuredAt but leaves the featured filter.
	require.Equal(t, 200, do(t, "PATCH", splatPath(s[2]), a.keys(""), map[string]any{"featured": false}).Status)
	ids, _ = listPage(t, a, "", "featured=true")
	require.Equal(t, []string{s[0]}, ids)

	// Archived scenes never appear.
	updateScene(t, s[3], `archived_at = now()`)
	ids, _ = listPage(t, a, "", "limit=100")
	require.NotContains(t, ids, s[3])
	require.Len(t, ids, 3)

	// Bad parameters name their problems.
	cursorOther := walkCursor(t, a, "sort=viewCount&limit=1")
	for q, issue := range map[string]string{
		"limit=0":                             "limit",
		"limit=101":                           "limit",
		"limit=abc":                           "limit",
		"limit=2.5":                           "limit",
		"sort=title":                          "sort",
		"dir=sideways":                        "dir",
		"featured=yes":                        "featured",
		"cursor=not-a-cursor":                 "cursor",
		"cursor=" + url.QueryEscape("e30"):    "cursor", // {}
		"cursor=" + cursorOther:               "cursor", // made for sort=viewCount
		"sort=viewCount&cursor=%21%21":        "cursor",
		"limit=0&sort=x&dir=y&featured=maybe": "featured",
	} {
		issues := requireEnvelope(t, do(t, "GET", "/api/v1/splats?"+q, a.keys(""), nil), 400)
		require.True(t, issuesMention(issues, issue+":"), "%s: %v", q, issues)
	}
	require.Len(t, requireEnvelope(t, do(t, "GET", "/api/v1/splats?limit=0&sort=x&dir=y&featured=maybe", a.keys(""), nil), 400), 4)
}

// walkCursor returns the first page's nextCursor of query.
func walkCursor(t *testing.T, tn tenant, query string) string {
	t.Helper()
	_, next := listPage(t, tn, "", query)
	require.NotEmpty(t, next)
	return next
}

func TestPatchSplatValidationAndSettings(t *testing.T) {
	a := newTenant(t)
	sc := newScene(t, a, "editor", 1)
	id, h := sc["id"].(string), a.keys("editor")

	time.Sleep(5 * time.Millisecond)
	r := do(t, "PATCH", splatPath(id), h, map[string]any{"title": "  Castle at dusk \n", "description": "A castle."})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "success", r.Body["status"])
	it := splatOf(r)
	requireItemShape(t, it)
	require.NotContains(t, it, "levelData", "PATCH answers the item shape")
	require.Equal(t, "Castle at dusk", it["title"])
	require.Equal(t, "A castle.", it["description"])
	require.Equal(t, true, it["isOwner"])
	require.Equal(t, "editor", it["externalUserId"])
	require.Equal(t, sc["createdAt"], it["createdAt"])
	require.Greater(t, it["updatedAt"], sc["updatedAt"])

	// Omitted fields are untouched; "" clears the description.
	r = do(t, "PATCH", splatPath(id), h, map[string]any{"description": ""})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "Castle at dusk", splatOf(r)["title"])
	require.Equal(t, "", splatOf(r)["description"])

	// Title bounds apply after trimming (multi-byte characters: TestPatchSplatCountsCharacters).
	r = do(t, "PATCH", splatPath(id), h, map[string]any{"title": "  " + strings.Repeat("t", 200) + "  "})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, strings.Repeat("t", 200), splatOf(r)["title"])
	r = do(t, "PATCH", splatPath(id), h, map[string]any{"description": strings.Repeat("d", 2000)})
	require.Equal(t, 200, r.Status, string(r.Raw))

	// Settings (contract item 6).
	r = do(t, "PATCH", splatPath(id), h, map[string]any{"allowEmbed": false, "allowClone": true, "allowComments": false,
		"allowReactions": false, "visibility": "public"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	it = splatOf(r)
	require.Equal(t, false, it["allowEmbed"])
	require.Equal(t, true, it["allowClone"])
	require.Equal(t, false, it["allowComments"])
	require.Equal(t, false, it["allowReactions"])
	require.Equal(t, "public", it["visibility"])
	g := splatOf(do(t, "GET", splatPath(id), h, nil))
	for k, v := range it {
		if k != "updatedAt" {
			require.Equal(t, v, g[k], k)
		}
	}

	for body, issue := range map[string]string{
		`{}`:              "body:",
		``:                "body:",
		`{"title":`:       "body:",
		`[1]`:             "body:",
		`{"title":"   "}`: "title:",
		`{"title":"` + strings.Repeat("a", 201) + `"}`: "title:",
		`{"title":null}`: "title:",
		`{"title":7}`:    "title:",
		`{"description":"` + strings.Repeat("a", 2001) + `"}`: "description:",
		`{"visibility":"unlisted"}`:                           "visibility:",
		`{"allowEmbed":"true"}`:                               "allowEmbed:",
		`{"allowClone":null}`:                                 "allowClone:",
		`{"allowComments":0}`:                                 "allowComments:",
		`{"allowReactions":"no"}`:                             "allowReactions:",
		`{"featured":true,"title":"x"}`:                       "featured:",
		`{"featured":false,"allowEmbed":true}`:                "featured:",
		`{"featured":"yes"}`:                                  "featured:",
		`{"ownerId":"x"}`:                                     "ownerId:",
	} {
		issues := requireEnvelope(t, do(t, "PATCH", splatPath(id), h, body), 400)
		require.True(t, issuesMention(issues, issue), "%s: %v", body, issues)
	}
	// Nothing changed through the rejected requests.
	require.Equal(t, strings.Repeat("t", 200), splatOf(do(t, "GET", splatPath(id), h, nil))["title"])
}

// TestPatchSplatCountsCharacters: the spec's limits are characters, not bytes — 200 two-byte
// characters are a valid title and 2000 a valid description.
func TestPatchSplatCountsCharacters(t *testing.T) {
	a := newTenant(t)
	id, h := newScene(t, a, "unicode", 1)["id"].(string), a.keys("unicode")
	r := do(t, "PATCH", splatPath(id), h, map[string]any{"title": strings.Repeat("é", 200)})
	require.Equal(t, 200, r.Status, "a 200-character title of 400 bytes: %s", r.Raw)
	require.Equal(t, strings.Repeat("é", 200), splatOf(r)["title"])
	r = do(t, "PATCH", splatPath(id), h, map[string]any{"description": strings.Repeat("é", 2000)})
	require.Equal(t, 200, r.Status, "a 2000-character description of 4000 bytes: %s", r.Raw)
	requireEnvelope(t, do(t, "PATCH", splatPath(id), h, map[string]any{"title": strings.Repeat("é", 201)}), 400)
}

func TestFeatureSplatRules(t *testing.T) {
	a, other := newTenant(t), newTenant(t)
	id := newScene(t, a, "artist", 1)["id"].(string)
	feature := func(h map[string]string, on bool) *testenv.Response {
		return do(t, "PATCH", splatPath(id), h, map[string]any{"featured": on})
	}

	// Private: 409; public with embedding disabled: 409.
	requireEnvelope(t, feature(a.keys(""), true), 409)
	require.Equal(t, 200, do(t, "PATCH", splatPath(id), a.keys("artist"), map[string]any{"visibility": "public", "allowEmbed": false}).Status)
	requireEnvelope(t, feature(a.keys(""), true), 409)
	require.Equal(t, 200, do(t, "PATCH", splatPath(id), a.keys("artist"), map[string]any{"allowEmbed": true}).Status)

	// Featuring needs only the keys; EU is ignored (here another customer's).
	r := feature(a.keys("somebody-else"), true)
	require.Equal(t, 200, r.Status, string(r.Raw))
	it := splatOf(r)
	requireItemShape(t, it)
	require.Equal(t, true, it["featured"])
	require.Regexp(t, isoRE, it["featuredAt"])
	require.Equal(t, "artist", it["externalUserId"])
	require.Equal(t, false, it["isOwner"])
	first := it["featuredAt"]

	// Idempotent: the original featuredAt stays.
	time.Sleep(5 * time.Millisecond)
	r = feature(a.keys(""), true)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, first, splatOf(r)["featuredAt"])
	require.Equal(t, true, splatOf(do(t, "GET", splatPath(id), a.keys("artist"), nil))["featured"])

	// Unfeaturing works at any time and keeps when it was first featured.
	r = feature(a.keys(""), false)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, false, splatOf(r)["featured"])
	require.Equal(t, first, splatOf(r)["featuredAt"])
	r = feature(a.keys(""), false)
	require.Equal(t, 200, r.Status, string(r.Raw))
	r = feature(a.keys("artist"), true)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, true, splatOf(r)["isOwner"])
	require.Equal(t, first, splatOf(r)["featuredAt"], "featuredAt is when the scene was first featured")

	// Making a featured scene private (or non-embeddable) takes it off the curated set.
	r = do(t, "PATCH", splatPath(id), a.keys("artist"), map[string]any{"visibility": "private"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, false, splatOf(r)["featured"])
	require.Equal(t, 200, do(t, "PATCH", splatPath(id), a.keys("artist"), map[string]any{"visibility": "public"}).Status)
	require.Equal(t, 200, feature(a.keys(""), true).Status)
	r = do(t, "PATCH", splatPath(id), a.keys("artist"), map[string]any{"allowEmbed": false})
	require.Equal(t, false, splatOf(r)["featured"])
	// Unfeaturing a scene that cannot be featured is fine.
	require.Equal(t, 200, feature(a.keys(""), false).Status)

	// Another integration cannot feature or unfeature it.
	requireEnvelope(t, feature(other.keys(""), true), 404)
	requireEnvelope(t, feature(other.keys(""), false), 404)
	requireEnvelope(t, feature(nil, false), 401)
}

// usageOf is the customer's usage: storage usedBytes and live scene count.
func usageOf(t *testing.T, tn tenant, eu string) (used, scenes int64) {
	t.Helper()
	r := do(t, "GET", "/api/v1/external-user/usage", tn.keys(eu), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	u := r.Body["usage"].(map[string]any)
	return int64(u["storage"].(map[string]any)["usedBytes"].(float64)), int64(u["splats"].(map[string]any)["used"].(float64))
}

// accountOf is the account's usedBytes and splatCount through the operator API.
func accountOf(t *testing.T, tn tenant) (used, scenes int64) {
	t.Helper()
	r := do(t, "GET", "/admin/v1/accounts/"+tn.AccountID, admin(), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	acct := r.Body["account"].(map[string]any)
	return int64(acct["usedBytes"].(float64)), int64(acct["splatCount"].(float64))
}

// objectExists reports whether the store holds key or its sealed copy (objectkeys.Sealed),
// where a committed upload's bytes are kept.
func objectExists(t *testing.T, st *objectstore.Store, key string) bool {
	t.Helper()
	return !objectGone(t, st, key)
}

func TestDeleteSplatReleasesStorageAndObjects(t *testing.T) {
	st := store(t)
	a := newTenant(t)
	keep := newScene(t, a, "deleter", 2)
	sc := newScene(t, a, "deleter", 3)
	id, h := sc["id"].(string), a.keys("deleter")
	key := keyOf(t, sc["splatUrl"].(string))
	require.True(t, objectExists(t, st, key))

	used, scenes := usageOf(t, a, "deleter")
	require.EqualValues(t, 160, used)
	require.EqualValues(t, 2, scenes)
	acctUsed, acctScenes := accountOf(t, a)
	require.EqualValues(t, 160, acctUsed)
	require.EqualValues(t, 2, acctScenes)

	requireEnvelope(t, do(t, "DELETE", splatPath(id), a.keys(""), nil), 400)
	requireEnvelope(t, do(t, "DELETE", splatPath(id), a.keys("stranger"), nil), 404)

	r := do(t, "DELETE", splatPath(id), h, nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"status": "success"}, r.Body)

	used, scenes = usageOf(t, a, "deleter")
	require.EqualValues(t, 160-96, used, "usedBytes drops by fileSizeBytes")
	require.EqualValues(t, 1, scenes)
	acctUsed, acctScenes = accountOf(t, a)
	require.EqualValues(t, 160-96, acctUsed)
	require.EqualValues(t, 1, acctScenes)
	// The file goes through the scene's asset purge (outbox + workflow), after the answer.
	eventually(t, "the scene file is removed from the store", func() bool { return !objectExists(t, st, key) }, func() string { return purgeMark(t, a.IntegrationID) })
	require.True(t, objectExists(t, st, keyOf(t, keep["splatUrl"].(string))), "other scenes keep theirs")

	requireEnvelope(t, do(t, "GET", splatPath(id), h, nil), 404)
	requireEnvelope(t, do(t, "DELETE", splatPath(id), h, nil), 404)
	ids, _ := listPage(t, a, "deleter", "")
	require.Equal(t, []string{keep["id"].(string)}, ids)
	used, _ = usageOf(t, a, "deleter")
	require.EqualValues(t, 64, used, "a second DELETE releases nothing")

	// Concurrent deletes of one scene release it exactly once.
	id = keep["id"].(string)
	codes := make(chan int, 4)
	for i := 0; i < 4; i++ {
		go func() {
			r, err := testenv.Do(env.URL, "DELETE", splatPath(id), h, nil)
			if err != nil {
				codes <- 0
				return
			}
			codes <- r.Status
		}()
	}
	got := map[int]int{}
	for i := 0; i < 4; i++ {
		got[<-codes]++
	}
	require.Equal(t, map[int]int{200: 1, 404: 3}, got)
	used, scenes = usageOf(t, a, "deleter")
	require.EqualValues(t, 0, used)
	require.EqualValues(t, 0, scenes)
	acctUsed, acctScenes = accountOf(t, a)
	require.EqualValues(t, 0, acctUsed)
	require.EqualValues(t, 0, acctScenes)
}

// makeClone turns a committed scene into an unpublished clone that holds no scene slot, as the
// clone endpoint will create them, and gives the slot back to the counters.
func makeClone(t *testing.T, id, sourceID string) {
	t.Helper()
	updateScene(t, id, `cloned_from_id = $2, holds_splat_slot = false, first_published_at = NULL, visibility = 'private'`, sourceID)
	exec(t, `UPDATE external_users SET splat_count = splat_count - 1 WHERE id = (SELECT owner_id FROM scenes WHERE id = $1)`, id)
	exec(t, `UPDATE accounts SET splat_count = splat_count - 1 WHERE id = (SELECT a.account_id FROM integrations a JOIN scenes s ON s.integration_id = a.id WHERE s.id = $1)`, id)
}

func TestPatchSplatFirstPublishOfClone(t *testing.T) {
	a := newTenant(t)
	h := a.keys("cloner")
	src := newScene(t, a, "cloner", 1)["id"].(string)
	clone := newScene(t, a, "cloner", 2)["id"].(string)
	makeClone(t, clone, src)
	_, acctScenes := accountOf(t, a)
	require.EqualValues(t, 1, acctScenes)

	// The account's scene cap is full: the first publish re-checks it. (Account caps through
	// the operator API, so that no customer retention rule reacts to lowered customer caps.)
	patchAccount := func(body map[string]any) {
		t.Helper()
		r := do(t, "PATCH", "/admin/v1/accounts/"+a.AccountID, admin(), body)
		require.Equal(t, 200, r.Status, string(r.Raw))
	}
	patchAccount(map[string]any{"maxSplats": 1})
	r := do(t, "PATCH", splatPath(clone), h, map[string]any{"visibility": "public"})
	requireEnvelope(t, r, 403)
	require.Equal(t, "plan_limit", r.Body["code"])
	require.Equal(t, "splatCount", r.Body["dimension"])
	require.Equal(t, "account", r.Body["scope"], "the account's cap, not the customer's")
	require.EqualValues(t, 1, r.Body["limit"])
	require.EqualValues(t, 1, r.Body["current"])
	require.IsType(t, "", r.Body["upgradeUrl"])
	require.Equal(t, "private", splatOf(do(t, "GET", splatPath(clone), h, nil))["visibility"], "a failed publish changes nothing")
	// Other edits of an unpublished clone need no slot.
	require.Equal(t, 200, do(t, "PATCH", splatPath(clone), h, map[string]any{"title": "draft"}).Status)

	// Storage is re-checked too: a bundle lowered below the usage blocks the publish.
	patchAccount(map[string]any{"maxSplats": nil, "storageBundleBytes": 50})
	r = do(t, "PATCH", splatPath(clone), h, map[string]any{"visibility": "public"})
	requireEnvelope(t, r, 413)
	require.Equal(t, "STORAGE_QUOTA_EXCEEDED", r.Body["code"])
	require.Equal(t, "account", r.Body["scope"])
	require.EqualValues(t, 96, r.Body["usedBytes"])
	require.EqualValues(t, 50, r.Body["limitBytes"])
	require.EqualValues(t, 0, r.Body["remainingBytes"])
	_, acctScenes = accountOf(t, a)
	require.EqualValues(t, 1, acctScenes, "failed publishes consume nothing")

	// With room, the first publish consumes the slot for good.
	patchAccount(map[string]any{"maxSplats": 2, "storageBundleBytes": 1 << 30})
	r = do(t, "PATCH", splatPath(clone), h, map[string]any{"visibility": "public"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "public", splatOf(r)["visibility"])
	_, acctScenes = accountOf(t, a)
	require.EqualValues(t, 2, acctScenes)
	// Private again does not free it, and publishing again does not charge again.
	require.Equal(t, 200, do(t, "PATCH", splatPath(clone), h, map[string]any{"visibility": "private"}).Status)
	_, acctScenes = accountOf(t, a)
	require.EqualValues(t, 2, acctScenes)
	patchAccount(map[string]any{"maxSplats": 0})
	require.Equal(t, 200, do(t, "PATCH", splatPath(clone), h, map[string]any{"visibility": "public"}).Status)
	_, acctScenes = accountOf(t, a)
	require.EqualValues(t, 2, acctScenes)
	patchAccount(map[string]any{"maxSplats": nil})

	// Deleting an unpublished clone gives back its bytes but no slot it never held.
	other := newScene(t, a, "cloner2", 1)["id"].(string)
	makeClone(t, other, src)
	used, scenes := accountOf(t, a)
	require.EqualValues(t, 128, used)
	require.EqualValues(t, 2, scenes)
	require.Equal(t, 200, do(t, "DELETE", splatPath(other), a.keys("cloner2"), nil).Status)
	used, scenes = accountOf(t, a)
	require.EqualValues(t, 96, used)
	require.EqualValues(t, 2, scenes)
}
