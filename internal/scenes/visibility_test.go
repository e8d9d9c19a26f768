package scenes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	entscene "github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
)

// TestVisibleToEmbed: an embed sees a live scene of its integration that is public and
// embeddable, or its customer's own whatever the visibility; never another integration's, an
// archived one, or (as a guest, owner "") a private or unembeddable one. e2e's
// TestEmbedVisibilityRuleMatchesSQL holds embedsql.VisibleScene to the same answers.
func TestVisibleToEmbed(t *testing.T) {
	now := time.Now()
	scene := func(integration, owner string, v entscene.Visibility, embed bool, archived *time.Time) *ent.Scene {
		return &ent.Scene{IntegrationID: integration, OwnerID: owner, Visibility: v, AllowEmbed: embed, ArchivedAt: archived}
	}
	for _, tc := range []struct {
		name                 string
		sc                   *ent.Scene
		integration, ownerID string
		want                 bool
	}{
		{"public embeddable, guest", scene("I", "O", entscene.VisibilityPublic, true, nil), "I", "", true},
		{"public embeddable, another customer", scene("I", "O", entscene.VisibilityPublic, true, nil), "I", "P", true},
		{"public not embeddable, guest", scene("I", "O", entscene.VisibilityPublic, false, nil), "I", "", false},
		{"public not embeddable, owner", scene("I", "O", entscene.VisibilityPublic, false, nil), "I", "O", true},
		{"private, guest", scene("I", "O", entscene.VisibilityPrivate, true, nil), "I", "", false},
		{"private, another customer", scene("I", "O", entscene.VisibilityPrivate, true, nil), "I", "P", false},
		{"private, owner", scene("I", "O", entscene.VisibilityPrivate, false, nil), "I", "O", true},
		{"another integration, public", scene("J", "O", entscene.VisibilityPublic, true, nil), "I", "", false},
		{"another integration, same owner id", scene("J", "O", entscene.VisibilityPrivate, true, nil), "I", "O", false},
		{"archived public, guest", scene("I", "O", entscene.VisibilityPublic, true, &now), "I", "", false},
		{"archived, owner", scene("I", "O", entscene.VisibilityPrivate, true, &now), "I", "O", false},
		{"ownerless row, guest", scene("I", "", entscene.VisibilityPrivate, true, nil), "I", "", false},
	} {
		require.Equal(t, tc.want, VisibleToEmbed(tc.sc, tc.integration, tc.ownerID), tc.name)
	}
}

// TestOpenToAll: only a live, public, embeddable scene's assets are served without a signature.
func TestOpenToAll(t *testing.T) {
	now := time.Now()
	require.True(t, OpenToAll(&ent.Scene{Visibility: entscene.VisibilityPublic, AllowEmbed: true}))
	require.False(t, OpenToAll(&ent.Scene{Visibility: entscene.VisibilityPublic}))
	require.False(t, OpenToAll(&ent.Scene{Visibility: entscene.VisibilityPrivate, AllowEmbed: true}))
	require.False(t, OpenToAll(&ent.Scene{Visibility: entscene.VisibilityPublic, AllowEmbed: true, ArchivedAt: &now}))
}

// TestParseID: a 24-hex id, lower-cased; anything else is the 404 that names no scene.
func TestParseID(t *testing.T) {
	id, err := ParseID("AAAAAAAAAAAAAAAAAAAAAAAA")
	require.NoError(t, err)
	require.Equal(t, "aaaaaaaaaaaaaaaaaaaaaaaa", id)
	for _, bad := range []string{"", "abc", "zzzzzzzzzzzzzzzzzzzzzzzz", "aaaaaaaaaaaaaaaaaaaaaaaaa", "trending"} {
		_, err := ParseID(bad)
		require.Error(t, err, bad)
		require.Equal(t, 404, apperr.From(err).Status, bad)
	}
}
