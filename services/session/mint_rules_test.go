package session

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// TestCheckMinter: another key than the caller's own is a 404; a session type whose
// capability the integration has not enabled is a 403.
func TestCheckMinter(t *testing.T) {
	m := minter{publicKey: "mpk_a", capabilities: []string{sessiontoken.TypeViewer}}
	require.NoError(t, checkMinter(m, &mintRequest{publicKey: "mpk_a", typ: sessiontoken.TypeViewer}))
	require.Equal(t, 404, apperr.From(checkMinter(m, &mintRequest{publicKey: "mpk_b", typ: sessiontoken.TypeViewer})).Status)
	require.Equal(t, 403, apperr.From(checkMinter(m, &mintRequest{publicKey: "mpk_a", typ: sessiontoken.TypeEditor})).Status)
}

// TestMintSceneRule: the splatId rules of every session type, with and without a customer.
func TestMintSceneRule(t *testing.T) {
	customer := &ent.ExternalUser{ID: "C"}
	sc := func(owner string, v scene.Visibility, embed bool) *ent.Scene {
		return &ent.Scene{OwnerID: owner, Visibility: v, AllowEmbed: embed}
	}
	viewer, editor := sessiontoken.TypeViewer, sessiontoken.TypeEditor
	for _, tc := range []struct {
		name     string
		sc       *ent.Scene
		typ      string
		coEdit   bool
		customer *ent.ExternalUser
		want     int // 0: allowed
	}{
		{"no live scene", nil, viewer, false, customer, 403},
		{"editor, own private", sc("C", scene.VisibilityPrivate, false), editor, false, customer, 0},
		{"editor, someone else's public", sc("D", scene.VisibilityPublic, true), editor, false, customer, 403},
		{"editor without EU", sc("D", scene.VisibilityPublic, true), editor, false, nil, 400},
		{"viewer, own private", sc("C", scene.VisibilityPrivate, false), viewer, false, customer, 0},
		{"viewer, product-public", sc("D", scene.VisibilityPublic, true), viewer, false, customer, 0},
		{"guest viewer, product-public", sc("D", scene.VisibilityPublic, true), viewer, false, nil, 0},
		{"viewer, someone else's private", sc("D", scene.VisibilityPrivate, true), viewer, false, customer, 403},
		{"viewer, public not embeddable", sc("D", scene.VisibilityPublic, false), viewer, false, customer, 403},
		{"guest viewer, public not embeddable", sc("D", scene.VisibilityPublic, false), viewer, false, nil, 403},
		{"guest viewer, private", sc("D", scene.VisibilityPrivate, true), viewer, false, nil, 400},
		// A coEdit session is bound to the scene it names: its customer's own, or another's
		// product-public scene, for a guest too; nothing its room would not admit.
		{"co-editor, own private", sc("C", scene.VisibilityPrivate, false), editor, true, customer, 0},
		{"co-editor, someone else's product-public", sc("D", scene.VisibilityPublic, true), editor, true, customer, 0},
		{"guest co-editor, product-public", sc("D", scene.VisibilityPublic, true), editor, true, nil, 0},
		{"co-editor, someone else's private", sc("D", scene.VisibilityPrivate, true), editor, true, customer, 403},
		{"guest co-editor, public not embeddable", sc("D", scene.VisibilityPublic, false), editor, true, nil, 400},
	} {
		err := mintSceneRule(tc.sc, &mintRequest{typ: tc.typ, coEdit: tc.coEdit}, tc.customer)
		if tc.want == 0 {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Equal(t, tc.want, apperr.From(err).Status, tc.name)
	}
}

// TestMintClaims: a guest's session names the account and an anonymous identity, a customer's
// the customer; the profile is signed in when given; the lifetime starts at the second.
func TestMintClaims(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	m := minter{accountID: "A", integrationID: "I", publicKey: "mpk_a"}
	avatar := "https://x.example/a.png"
	req := &mintRequest{publicKey: "mpk_a", typ: sessiontoken.TypeEditor, splatID: "s", coEdit: true, hasUser: true, name: "Ada", avatarURL: &avatar}

	guest := mintClaims(now, m, req, nil)
	require.Equal(t, "A", guest.Subject)
	require.True(t, strings.HasPrefix(guest.IdentityUserID, "guest_"), guest.IdentityUserID)
	require.Empty(t, guest.ExternalUserID)
	require.Equal(t, now.Truncate(time.Second), guest.IssuedAt.Time)
	require.Equal(t, now.Truncate(time.Second).Add(sessiontoken.Lifetime), guest.ExpiresAt.Time)
	require.Equal(t, []string{sessiontoken.TypeEditor}, guest.Capabilities)
	require.Equal(t, "I", guest.IntegrationID)
	require.Equal(t, "mpk_a", guest.PublicKey)
	require.Equal(t, "s", guest.SplatID)
	require.True(t, guest.CoEdit)
	require.Equal(t, "Ada", guest.Name)
	require.Equal(t, &avatar, guest.AvatarURL)
	require.NotEqual(t, guest.IdentityUserID, mintClaims(now, m, req, nil).IdentityUserID, "each guest is someone else")

	scoped := mintClaims(now, m, &mintRequest{typ: sessiontoken.TypeViewer}, &ent.ExternalUser{ID: "C", ExternalUserID: "eu-1"})
	require.Equal(t, "C", scoped.Subject)
	require.Equal(t, "eu-1", scoped.IdentityUserID)
	require.Equal(t, "eu-1", scoped.ExternalUserID)
	require.Empty(t, scoped.Name)
	require.Nil(t, scoped.AvatarURL)
}
