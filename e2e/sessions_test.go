//go:build e2e

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// secretBearer is the embed-session minting scheme's header set, plus EU when eu is not empty.
func (tn tenant) secretBearer(eu string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + tn.SecretKey}
	if eu != "" {
		h["X-Service-External-User-Id"] = eu
	}
	return h
}

// mint mints a session and returns the response.
func mint(t *testing.T, tn tenant, eu string, body map[string]any) map[string]any {
	t.Helper()
	if _, ok := body["publicKey"]; !ok {
		body["publicKey"] = tn.PublicKey
	}
	r := do(t, "POST", "/api/editor/embed-sessions", tn.secretBearer(eu), body)
	require.Equal(t, 201, r.Status, string(r.Raw))
	return r.Body
}

// mintToken mints a session and returns its token.
func mintToken(t *testing.T, tn tenant, eu string, body map[string]any) string {
	t.Helper()
	return mint(t, tn, eu, body)["sessionToken"].(string)
}

// sessionHeaders is the session bearer scheme.
func sessionHeaders(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// tokenParts decodes a JWT's header and claims without verifying it.
func tokenParts(t *testing.T, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	for i, dst := range []*map[string]any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, dst))
	}
	return header, claims
}

func TestMintSessionTokenClaims(t *testing.T) {
	tn := newTenant(t)
	sc := newScene(t, tn, "ada", 4)
	before := time.Now().Add(-time.Second)
	body := mint(t, tn, "ada", map[string]any{"type": "editor", "splatId": sc["id"],
		"user": map[string]any{"name": "Ada Lovelace", "avatarUrl": "https://cdn.example.com/ada.png"}})
	require.Equal(t, "success", body["status"])
	header, claims := tokenParts(t, body["sessionToken"].(string))
	require.Equal(t, "HS256", header["alg"])
	require.NotEmpty(t, header["kid"], "the signing key is named so keys can rotate")

	var u map[string]any
	r := do(t, "GET", "/api/v1/external-user", tn.keys("ada"), nil)
	u = r.Body["externalUser"].(map[string]any)
	require.Equal(t, "service_embed_session", claims["typ"])
	require.Equal(t, u["id"], claims["sub"])
	require.Equal(t, "ada", claims["identityUserId"])
	require.Equal(t, tn.IntegrationID, claims["integrationId"])
	require.Equal(t, tn.PublicKey, claims["publicKey"])
	require.Equal(t, []any{"editor"}, claims["capabilities"])
	require.Equal(t, sc["id"], claims["splatId"])
	require.Equal(t, "Ada Lovelace", claims["name"])
	require.Equal(t, "https://cdn.example.com/ada.png", claims["avatarUrl"])
	iat, exp := int64(claims["iat"].(float64)), int64(claims["exp"].(float64))
	require.Equal(t, iat+900, exp)
	require.GreaterOrEqual(t, iat, before.Unix())
	expiresAt, err := time.Parse(time.RFC3339, body["expiresAt"].(string))
	require.NoError(t, err)
	require.Equal(t, exp, expiresAt.Unix())

	// An anonymous viewer: the integration owner is the subject, no splatId, no profile.
	_, claims = tokenParts(t, mintToken(t, tn, "", map[string]any{"type": "viewer"}))
	require.Equal(t, tn.AccountID, claims["sub"])
	require.Equal(t, []any{"viewer"}, claims["capabilities"])
	require.NotContains(t, claims, "splatId")
	require.NotContains(t, claims, "name")
	require.NotEmpty(t, claims["identityUserId"])
}

func TestMintSessionRules(t *testing.T) {
	tn := newTenant(t)
	other := newTenant(t)
	own := newScene(t, tn, "ada", 4)["id"].(string)
	bobs := newScene(t, tn, "bob", 4)["id"].(string) // private to bob
	public := newScene(t, tn, "bob", 4)["id"].(string)
	patchSplat(t, tn, "bob", public, map[string]any{"visibility": "public"})
	publicNoEmbed := newScene(t, tn, "bob", 4)["id"].(string)
	patchSplat(t, tn, "bob", publicNoEmbed, map[string]any{"visibility": "public", "allowEmbed": false})
	foreign := newScene(t, other, "ada", 4)["id"].(string)
	archived := newScene(t, tn, "ada", 4)["id"].(string)
	updateScene(t, archived, `archived_at = now(), visibility = 'private', allow_embed = false`)
	ensureCustomer(t, tn, "off", map[string]any{"status": "inactive"})
	ensureCustomer(t, tn, "gone", nil)
	require.Equal(t, 200, do(t, "DELETE", "/api/v1/external-user", tn.keys("gone"), nil).Status)
	viewerOnly := newIntegration(t, newAccount(t, "pro", 1<<30), map[string]any{"capabilities": []string{"viewer"}})

	ok := []struct {
		name string
		eu   string
		body map[string]any
	}{
		{"blank guest editor", "", map[string]any{}},
		{"blank guest editor, explicit", "", map[string]any{"type": "editor", "splatId": nil, "user": nil}},
		{"scoped editor", "ada", map[string]any{"type": "editor"}},
		{"scoped editor opening own scene", "ada", map[string]any{"type": "editor", "splatId": own}},
		{"anonymous viewer", "", map[string]any{"type": "viewer"}},
		{"anonymous viewer of a product-public scene", "", map[string]any{"type": "viewer", "splatId": public}},
		{"scoped viewer of own private scene", "ada", map[string]any{"type": "viewer", "splatId": own}},
		{"scoped viewer of another's public scene", "ada", map[string]any{"type": "viewer", "splatId": public}},
		{"guest with a profile", "", map[string]any{"user": map[string]any{"name": "Guest", "avatarUrl": nil}}},
		{"upper-case splat id", "ada", map[string]any{"type": "viewer", "splatId": strings.ToUpper(own)}},
	}
	for _, tc := range ok {
		t.Run("ok/"+tc.name, func(t *testing.T) { mint(t, tn, tc.eu, tc.body) })
	}
	t.Run("ok/viewer-only integration mints viewers", func(t *testing.T) {
		mint(t, viewerOnly, "", map[string]any{"type": "viewer"})
	})

	bad := []struct {
		name    string
		tn      tenant
		headers map[string]string
		body    any
		status  int
		issue   string
	}{
		{"invalid JSON", tn, tn.secretBearer(""), `{"publicKey":`, 400, "body"},
		{"no public key", tn, tn.secretBearer(""), map[string]any{}, 400, "publicKey"},
		{"invalid type", tn, tn.secretBearer(""), map[string]any{"publicKey": tn.PublicKey, "type": "admin"}, 400, "type"},
		{"invalid splat id", tn, tn.secretBearer("ada"), map[string]any{"publicKey": tn.PublicKey, "splatId": "123"}, 400, "splatId"},
		{"name too long", tn, tn.secretBearer(""), map[string]any{"publicKey": tn.PublicKey, "user": map[string]any{"name": strings.Repeat("n", 65)}}, 400, "user.name"},
		{"editor opening a scene without EU", tn, tn.secretBearer(""), map[string]any{"publicKey": tn.PublicKey, "splatId": own}, 400, "X-Service-External-User-Id"},
		{"viewer of a private scene without EU", tn, tn.secretBearer(""), map[string]any{"publicKey": tn.PublicKey, "type": "viewer", "splatId": bobs}, 400, "X-Service-External-User-Id"},
		{"EU too long", tn, map[string]string{"Authorization": "Bearer " + tn.SecretKey, "X-Service-External-User-Id": strings.Repeat("x", 257)},
			map[string]any{"publicKey": tn.PublicKey}, 400, "X-Service-External-User-Id"},
		{"no Authorization", tn, nil, map[string]any{"publicKey": tn.PublicKey}, 401, ""},
		{"wrong secret", tn, map[string]string{"Authorization": "Bearer msk_wrong"}, map[string]any{"publicKey": tn.PublicKey}, 401, ""},
		{"public key as bearer", tn, map[string]string{"Authorization": "Bearer " + tn.PublicKey}, map[string]any{"publicKey": tn.PublicKey}, 401, ""},
		{"capability not enabled", viewerOnly, viewerOnly.secretBearer(""), map[string]any{"publicKey": viewerOnly.PublicKey, "type": "editor"}, 403, ""},
		{"inactive customer", tn, tn.secretBearer("off"), map[string]any{"publicKey": tn.PublicKey, "type": "viewer"}, 403, ""},
		{"unknown customer", tn, tn.secretBearer("nobody"), map[string]any{"publicKey": tn.PublicKey}, 403, ""},
		{"deleted customer", tn, tn.secretBearer("gone"), map[string]any{"publicKey": tn.PublicKey}, 403, ""},
		{"editor opening another customer's scene", tn, tn.secretBearer("ada"), map[string]any{"publicKey": tn.PublicKey, "splatId": bobs}, 403, ""},
		{"editor opening another customer's public scene", tn, tn.secretBearer("ada"), map[string]any{"publicKey": tn.PublicKey, "splatId": public}, 403, ""},
		{"scoped viewer of another's private scene", tn, tn.secretBearer("ada"), map[string]any{"publicKey": tn.PublicKey, "type": "viewer", "splatId": bobs}, 403, ""},
		{"viewer of a non-embeddable public scene", tn, tn.secretBearer(""), map[string]any{"publicKey": tn.PublicKey, "type": "viewer", "splatId": publicNoEmbed}, 403, ""},
		{"scene of another integration", tn, tn.secretBearer("ada"), map[string]any{"publicKey": tn.PublicKey, "type": "viewer", "splatId": foreign}, 403, ""},
		{"archived scene", tn, tn.secretBearer("ada"), map[string]any{"publicKey": tn.PublicKey, "type": "viewer", "splatId": archived}, 403, ""},
		{"absent scene", tn, tn.secretBearer("ada"), map[string]any{"publicKey": tn.PublicKey, "type": "viewer", "splatId": "0123456789abcdef01234567"}, 403, ""},
		{"unknown public key", tn, tn.secretBearer(""), map[string]any{"publicKey": "mpk_nobody"}, 404, ""},
		{"another integration's public key", tn, tn.secretBearer(""), map[string]any{"publicKey": other.PublicKey}, 404, ""},
	}
	for _, tc := range bad {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			issues := requireEnvelope(t, do(t, "POST", "/api/editor/embed-sessions", tc.headers, tc.body), tc.status)
			if tc.issue != "" {
				require.True(t, issuesMention(issues, tc.issue), "issues %v lack %q", issues, tc.issue)
			}
		})
	}

	t.Run("refused/revoked integration", func(t *testing.T) {
		gone := newTenant(t)
		require.Equal(t, 200, do(t, "POST", "/admin/v1/integrations/"+gone.IntegrationID+"/revoke", admin(), nil).Status)
		requireEnvelope(t, do(t, "POST", "/api/editor/embed-sessions", gone.secretBearer(""), map[string]any{"publicKey": gone.PublicKey}), 410)
	})
}

func TestSessionTokenAttacksThroughTheGateway(t *testing.T) {
	tn := newTenant(t)
	sc := newScene(t, tn, "ada", 4)["id"].(string)
	good := mintToken(t, tn, "ada", map[string]any{"type": "viewer", "splatId": sc})
	require.Equal(t, 200, do(t, "GET", "/api/embed/splats/"+sc, sessionHeaders(good), nil).Status)
	header, claims := tokenParts(t, good)
	encode := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	parts := strings.Split(good, ".")
	noneHeader := map[string]any{"alg": "none", "typ": "JWT", "kid": header["kid"]}
	expired := map[string]any{}
	for k, v := range claims {
		expired[k] = v
	}
	expired["exp"] = float64(time.Now().Add(-time.Minute).Unix())
	otherTyp := map[string]any{}
	for k, v := range claims {
		otherTyp[k] = v
	}
	otherTyp["typ"] = "service_api"
	forged := func(c map[string]any) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(c))
		tok.Header["kid"] = header["kid"]
		s, err := tok.SignedString([]byte(strings.Repeat("f", 32)))
		require.NoError(t, err)
		return s
	}
	for name, tok := range map[string]string{
		"alg none":                               encode(noneHeader) + "." + parts[1] + ".",
		"alg none with sig":                      encode(noneHeader) + "." + parts[1] + "." + parts[2],
		"HS512 header":                           encode(map[string]any{"alg": "HS512", "typ": "JWT", "kid": header["kid"]}) + "." + parts[1] + "." + parts[2],
		"wrong key":                              forged(claims),
		"unknown kid":                            encode(map[string]any{"alg": "HS256", "typ": "JWT", "kid": "nope"}) + "." + parts[1] + "." + parts[2],
		"expired (re-signed with a guessed key)": forged(expired),
		"expired claims under the real signature": parts[0] + "." + encode(expired) + "." + parts[2],
		"another typ": parts[0] + "." + encode(otherTyp) + "." + parts[2],
		"secret key":  tn.SecretKey,
	} {
		t.Run(name, func(t *testing.T) {
			requireEnvelope(t, do(t, "GET", "/api/embed/splats/"+sc, sessionHeaders(tok), nil), 401)
		})
	}

	// Revoking the integration ends its live sessions: 410, as for its keys.
	require.Equal(t, 200, do(t, "POST", "/admin/v1/integrations/"+tn.IntegrationID+"/revoke", admin(), nil).Status)
	requireEnvelope(t, do(t, "GET", "/api/embed/splats/"+sc, sessionHeaders(good), nil), 410)
}

func TestSessionOfOneIntegrationCannotPoseAsAnother(t *testing.T) {
	a, b := newTenant(t), newTenant(t)
	bScene := newScene(t, b, "bob", 4)["id"].(string)
	patchSplat(t, b, "bob", bScene, map[string]any{"visibility": "public"})
	tok := mintToken(t, a, "", map[string]any{"type": "viewer"})
	// A's session never reads B's scenes, public or not: 404, existence undisclosed.
	requireEnvelope(t, do(t, "GET", "/api/embed/splats/"+bScene, sessionHeaders(tok), nil), 404)
}

func TestEmbedSceneReadScopes(t *testing.T) {
	tn := newTenant(t)
	own := newScene(t, tn, "ada", 4)["id"].(string)
	bobsPrivate := newScene(t, tn, "bob", 4)["id"].(string)
	public := newScene(t, tn, "bob", 4)["id"].(string)
	patchSplat(t, tn, "bob", public, map[string]any{"visibility": "public"})
	public2 := newScene(t, tn, "bob", 4)["id"].(string)
	patchSplat(t, tn, "bob", public2, map[string]any{"visibility": "public"})
	noEmbed := newScene(t, tn, "bob", 4)["id"].(string)
	patchSplat(t, tn, "bob", noEmbed, map[string]any{"visibility": "public", "allowEmbed": false})

	get := func(tok, id string) int {
		return do(t, "GET", "/api/embed/splats/"+id, sessionHeaders(tok), nil).Status
	}

	guest := mintToken(t, tn, "", map[string]any{"type": "viewer"})
	require.Equal(t, 200, get(guest, public))
	require.Equal(t, 404, get(guest, own))
	require.Equal(t, 404, get(guest, noEmbed))
	require.Equal(t, 404, get(guest, "zz"))

	scoped := mintToken(t, tn, "ada", map[string]any{"type": "editor"})
	require.Equal(t, 200, get(scoped, own))
	require.Equal(t, 200, get(scoped, public))
	require.Equal(t, 404, get(scoped, bobsPrivate))
	r := do(t, "GET", "/api/embed/splats/"+own, sessionHeaders(scoped), nil)
	s := splatOf(r)
	requireItemShape(t, s)
	require.Equal(t, true, s["isOwner"])
	require.Contains(t, s, "levelData")
	require.Contains(t, s, "lodFolderKey")

	// A viewer pinned to a scene (contract item 5) loads only that scene.
	pinned := mintToken(t, tn, "", map[string]any{"type": "viewer", "splatId": public})
	require.Equal(t, 200, get(pinned, public))
	require.Equal(t, 404, get(pinned, public2))

	// An EU header from the embed's page cannot widen a guest session to a customer's scenes,
	// and a login cookie sent along is ignored: the bearer alone decides.
	h := sessionHeaders(guest)
	h["X-Service-External-User-Id"] = "ada"
	h["Cookie"] = "studio_session=someone-else"
	require.Equal(t, 404, do(t, "GET", "/api/embed/splats/"+own, h, nil).Status)
	h = sessionHeaders(scoped)
	h["Cookie"] = "studio_session=someone-else"
	require.Equal(t, 200, do(t, "GET", "/api/embed/splats/"+own, h, nil).Status)

	// Archived scenes are never served, not even to their owner.
	updateScene(t, own, `archived_at = now()`)
	require.Equal(t, 404, get(scoped, own))

	// The key schemes do not open the embed API.
	requireEnvelope(t, do(t, "GET", "/api/embed/splats/"+public, tn.keys("ada"), nil), 401)
}

func TestSessionsThroughTheSplitGateway(t *testing.T) {
	s := startSplit(t)
	tn := newTenant(t)
	own := newScene(t, tn, "ada", 4)["id"].(string)
	r := doAt(t, s.gatewayURL, "POST", "/api/editor/embed-sessions", tn.secretBearer("ada"),
		map[string]any{"publicKey": tn.PublicKey, "type": "viewer", "splatId": own})
	require.Equal(t, 201, r.Status, string(r.Raw))
	tok := r.Body["sessionToken"].(string)
	// The session's scope (customer, pinned scene) travels to the session service in the signed
	// caller: the owner reads the private scene through the split gateway too.
	r = doAt(t, s.gatewayURL, "GET", "/api/embed/splats/"+own, sessionHeaders(tok), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, true, splatOf(r)["isOwner"])
	requireEnvelope(t, doAt(t, s.gatewayURL, "GET", "/api/embed/splats/"+own, sessionHeaders(tok+"x"), nil), 401)
}
