//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// nulRoute is a write route with a body it accepts: the NUL test poisons every string and key of
// that body in turn.
type nulRoute struct {
	name, method, path string
	headers            map[string]string
	body               map[string]any
}

// nulVariant is one poisoned copy of a route's body and the path of the poisoned place, as the
// decoder names it (keys joined by dots, array items as [i], a NUL in a key echoed as '?').
type nulVariant struct {
	path string
	body any
}

// nulVariants returns one copy of v per string value and per object key in it, with a NUL
// character inserted there.
func nulVariants(v any, path string) []nulVariant {
	join := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	var out []nulVariant
	switch x := v.(type) {
	case string:
		out = append(out, nulVariant{path: path, body: x + "\x00"})
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			// The key itself.
			m := shallowCopy(x)
			delete(m, k)
			m["\x00"+k] = x[k]
			out = append(out, nulVariant{path: join("?" + k), body: m})
			// What is under it.
			for _, sub := range nulVariants(x[k], join(k)) {
				m := shallowCopy(x)
				m[k] = sub.body
				out = append(out, nulVariant{path: sub.path, body: m})
			}
		}
	case []any:
		for i, item := range x {
			for _, sub := range nulVariants(item, path+"["+strconv.Itoa(i)+"]") {
				list := append([]any(nil), x...)
				list[i] = sub.body
				out = append(out, nulVariant{path: sub.path, body: list})
			}
		}
	}
	return out
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// writeFingerprint digests every row a write of the tenant could touch, plus the number of
// accounts and integrations (which the operator routes create), so a test can tell that a
// refused request wrote nothing.
func writeFingerprint(t *testing.T, tn tenant) string {
	t.Helper()
	var parts []string
	for _, q := range []string{
		`SELECT count(*)::text FROM accounts`,
		`SELECT count(*)::text FROM integrations`,
		`SELECT coalesce(string_agg(md5(a::text), ',' ORDER BY a.id), '') FROM accounts a WHERE a.id = $1`,
		`SELECT coalesce(string_agg(md5(i::text), ',' ORDER BY i.id), '') FROM integrations i WHERE i.account_id = $1`,
		`SELECT coalesce(string_agg(md5(e::text), ',' ORDER BY e.id), '') FROM external_users e
		   WHERE e.integration_id IN (SELECT id FROM integrations WHERE account_id = $1)`,
		`SELECT coalesce(string_agg(md5(s::text), ',' ORDER BY s.id), '') FROM scenes s
		   WHERE s.integration_id IN (SELECT id FROM integrations WHERE account_id = $1)`,
		`SELECT coalesce(string_agg(md5(u::text), ',' ORDER BY u.id), '') FROM upload_tickets u
		   WHERE u.integration_id IN (SELECT id FROM integrations WHERE account_id = $1)`,
		`SELECT coalesce(string_agg(md5(l::text), ',' ORDER BY l.id), '') FROM scene_likes l
		   WHERE l.integration_id IN (SELECT id FROM integrations WHERE account_id = $1)`,
		`SELECT coalesce(string_agg(md5(c::text), ',' ORDER BY c.id), '') FROM clone_jobs c
		   WHERE c.integration_id IN (SELECT id FROM integrations WHERE account_id = $1)`,
	} {
		var s string
		args := []any{}
		if strings.Contains(q, "$1") {
			args = append(args, tn.AccountID)
		}
		require.NoError(t, env.Process.DB.Pool.QueryRow(context.Background(), q, args...).Scan(&s), q)
		parts = append(parts, s)
	}
	return strings.Join(parts, "|")
}

// TestNULIsRefusedEverywhere: Postgres text and jsonb cannot hold the NUL character, which JSON
// can carry as \u0000. A NUL in any string or key of any write route's body (title,
// description, displayName, metadata values and keys, levelData deep inside, upload names,
// operator fields, session bodies) is a 400 with the spec's envelope and an issue naming the
// place, and nothing is written. Before the shared decoder refused it, the fields that passed
// their own checks reached Postgres and answered 500.
func TestNULIsRefusedEverywhere(t *testing.T) {
	tn := newTenant(t)
	const owner = "nul-owner"
	sc := commitScene(t, tn, owner, 4)
	sceneID := sc["id"].(string)
	editor := sessionHeaders(editorToken(t, tn, owner))
	viewer := sessionHeaders(mintToken(t, tn, "", map[string]any{"type": "viewer"}))
	// The routes under test must accept their base bodies: the poison is then the only fault.
	routes := []nulRoute{
		{"customer", "PUT", "/api/v1/external-user", tn.keys(owner), map[string]any{
			"displayName": "Ada", "avatarUrl": "https://example.com/a.png", "emailHash": "0123456789abcdef",
			"metadata": map[string]any{"plan": "gold", "seat": 3}, "status": "active", "billingState": "ok",
			"keepSplatIds": []any{sceneID}, "protectedSplatIds": []any{sceneID}}},
		{"scene patch", "PATCH", "/api/v1/splats/" + sceneID, tn.keys(owner), map[string]any{
			"title": "Renamed", "description": "words", "visibility": "public"}},
		{"splat-file upload", "POST", "/api/v1/uploads/splat-file", tn.keys(owner), map[string]any{
			"fileName": "a.splat", "contentType": "application/splat", "fileSize": 64}},
		{"lod-folder upload", "POST", "/api/v1/uploads/lod-folder", tn.keys(owner), map[string]any{
			"files": []any{
				map[string]any{"relativePath": "lod-meta.json", "contentType": "application/json", "fileSize": 10},
				map[string]any{"relativePath": "0/a.webp", "contentType": "image/webp", "fileSize": 10}}}},
		{"images upload", "POST", "/api/v1/uploads/splat-images", tn.keys(owner), map[string]any{
			"thumbnail": map[string]any{"contentType": "image/png", "fileSize": 10}}},
		{"commit", "POST", "/api/v1/splats", tn.keys(owner), map[string]any{
			"title": "New", "description": "d", "splatUrl": sc["splatUrl"], "visibility": "private"}},
		{"editor patch", "PATCH", "/api/embed/editor/splats/" + sceneID, editor, map[string]any{
			"title": "Edited", "description": "d",
			"levelData": map[string]any{"camera": map[string]any{"position": []any{0, 1, 2}, "target": []any{0, 0, 0}},
				"annotations": []any{map[string]any{"id": "a1", "position": []any{0, 0, 1}, "title": "Door", "text": "Open it"}}}}},
		{"editor commit", "POST", "/api/embed/editor/splats", editor, map[string]any{
			"title": "New", "splatUrl": sc["splatUrl"], "levelData": map[string]any{"note": "x"}}},
		{"mint", "POST", "/api/editor/embed-sessions", tn.secretBearer(owner), map[string]any{
			"publicKey": tn.PublicKey, "type": "editor", "splatId": sceneID,
			"user": map[string]any{"name": "Ada", "avatarUrl": "https://example.com/a.png"}}},
		{"view", "POST", "/api/embed/views", viewer, map[string]any{"splatId": sceneID, "visitorId": "visitor-1"}},
		{"like", "POST", "/api/embed/splats/" + sceneID + "/like", viewer, map[string]any{"visitorId": "visitor-1"}},
		{"account create", "POST", "/admin/v1/accounts", admin(), map[string]any{
			"name": "Acme", "plan": "pro", "storageBundleBytes": 1 << 20}},
		{"account patch", "PATCH", "/admin/v1/accounts/" + tn.AccountID, admin(), map[string]any{"name": "Acme 2", "plan": "pro"}},
		{"integration create", "POST", "/admin/v1/integrations", admin(), map[string]any{
			"accountId": tn.AccountID, "productSlug": "nul.example.com", "capabilities": []any{"viewer"},
			"frameAncestors": []any{"https://nul.example.com"}}},
		{"integration patch", "PATCH", "/admin/v1/integrations/" + tn.IntegrationID, admin(), map[string]any{
			"productSlug": "nul2.example.com", "capabilities": []any{"viewer", "editor"},
			"frameAncestors": []any{"https://nul.example.com"}}},
	}
	before := writeFingerprint(t, tn)
	tried := 0
	for _, rt := range routes {
		for _, v := range nulVariants(rt.body, "") {
			tried++
			t.Run(fmt.Sprintf("%s %s", rt.name, v.path), func(t *testing.T) {
				// json.Marshal spells the NUL character \u0000, as any client would.
				raw, err := json.Marshal(v.body)
				require.NoError(t, err)
				require.Contains(t, string(raw), `\u0000`)
				r := do(t, rt.method, rt.path, rt.headers, string(raw))
				issues := requireEnvelope(t, r, 400)
				require.True(t, issuesMention(issues, v.path+": must not contain the NUL character"),
					"issues %v should name %q", issues, v.path)
			})
		}
	}
	require.Greater(t, tried, 60, "every string and key of every body was poisoned")
	require.Equal(t, before, writeFingerprint(t, tn), "a refused request wrote something")

	// A byte that is not UTF-8 in a path segment the operator API unescapes itself names no
	// customer: 404, as for any unknown one, not a 500 from Postgres. A NUL there is refused by
	// the gateway before any route, as every control character in a path is (canonical.go).
	r := do(t, "GET", "/admin/v1/integrations/"+tn.IntegrationID+"/customers/a%ffb/usage", admin(), nil)
	requireEnvelope(t, r, 404)
	r = do(t, "GET", "/admin/v1/integrations/"+tn.IntegrationID+"/customers/a%00b/usage", admin(), nil)
	require.True(t, issuesMention(requireEnvelope(t, r, 400), "control characters"), string(r.Raw))
	require.Equal(t, "NON_CANONICAL_PATH", r.Body["code"])

	// Query parameters and headers that reach Postgres: the list's are enums, integers and a
	// cursor whose parts are validated; the EU header refuses control characters. Go's client
	// will not send a NUL in a header, so that request is written by hand.
	for _, q := range []string{"sort=%00", "dir=a%00", "featured=%00", "limit=1%00", "cursor=%00"} {
		requireEnvelope(t, do(t, "GET", "/api/v1/splats?"+q, tn.keys(owner), nil), 400)
	}
	status, body := rawRequest(t, "GET /api/v1/external-user HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"+
		"Authorization: Bearer "+tn.SecretKey+"\r\nX-Service-Public-Key: "+tn.PublicKey+"\r\n"+
		"X-Service-External-User-Id: a\x00b\r\n\r\n")
	require.Equal(t, 400, status, body)
	require.Contains(t, body, `"issues"`)

	// The base bodies themselves are fine (so the poison was the only fault): one of them, sent
	// clean, is accepted.
	r = do(t, "PATCH", "/api/v1/splats/"+sceneID, tn.keys(owner), map[string]any{"title": "Renamed"})
	require.Equal(t, 200, r.Status, string(r.Raw))
}
