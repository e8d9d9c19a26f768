package scenes

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
)

// TestEditApply: the edit's fields land on the update, levelData null clears it, and a featured
// scene leaves the curated set exactly when the edit makes it private or non-embeddable.
func TestEditApply(t *testing.T) {
	str := func(s string) *string { return &s }
	boolean := func(b bool) *bool { return &b }
	vis := func(v scene.Visibility) *scene.Visibility { return &v }
	for _, tc := range []struct {
		name        string
		featured    bool
		e           Edit
		unfeature   bool
		clearsLevel bool
	}{
		{name: "title only", featured: true, e: Edit{Title: str("T")}},
		{name: "made private", featured: true, e: Edit{Visibility: vis(scene.VisibilityPrivate)}, unfeature: true},
		{name: "made public", featured: true, e: Edit{Visibility: vis(scene.VisibilityPublic)}},
		{name: "embedding off", featured: true, e: Edit{AllowEmbed: boolean(false)}, unfeature: true},
		{name: "embedding on", featured: true, e: Edit{AllowEmbed: boolean(true)}},
		{name: "private, not featured", e: Edit{Visibility: vis(scene.VisibilityPrivate)}},
		{name: "levelData cleared", e: Edit{HasLevelData: true}, clearsLevel: true},
		{name: "levelData set", e: Edit{HasLevelData: true, LevelData: map[string]any{"v": 1.0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := &ent.Scene{Featured: tc.featured}
			up := ent.NewClient().Scene.UpdateOne(cur)
			tc.e.Apply(cur, up)
			m := up.Mutation()
			f, set := m.Featured()
			require.Equal(t, tc.unfeature, set && !f, "featured cleared")
			require.Equal(t, tc.unfeature, tc.e.Unfeatures(cur))
			if tc.e.Title != nil {
				got, _ := m.Title()
				require.Equal(t, *tc.e.Title, got)
			} else {
				_, set := m.Title()
				require.False(t, set, "a field the edit leaves alone is not written")
			}
			if tc.e.Visibility != nil {
				got, _ := m.Visibility()
				require.Equal(t, *tc.e.Visibility, got)
			}
			require.Equal(t, tc.clearsLevel, m.LevelDataCleared())
			if tc.e.LevelData != nil {
				got, _ := m.LevelData()
				require.Equal(t, tc.e.LevelData, got)
			}
		})
	}
}

// TestEditPublishesAndRoom: only a first making-public publishes; the room hears of every field
// it edits, and of nothing else.
func TestEditPublishesAndRoom(t *testing.T) {
	public, private := scene.VisibilityPublic, scene.VisibilityPrivate
	now := time.Now()
	require.True(t, (&Edit{Visibility: &public}).Publishes(&ent.Scene{}))
	require.False(t, (&Edit{Visibility: &public}).Publishes(&ent.Scene{FirstPublishedAt: &now}), "published before")
	require.False(t, (&Edit{Visibility: &private}).Publishes(&ent.Scene{}))
	require.False(t, (&Edit{}).Publishes(&ent.Scene{}))

	yes, no := true, false
	require.False(t, (&Edit{AllowEmbed: &yes, AllowClone: &no}).ChangesRoom())
	for _, e := range []Edit{{Visibility: &private}, {AllowComments: &yes}, {AllowReactions: &no}, {HasLevelData: true}} {
		require.True(t, e.ChangesRoom(), "%+v", e)
	}
}

// TestFirstPublishOfAClone: a clone takes a slot at its first publish, and only if neither the
// customer nor (without overage) the account is over its storage.
func TestFirstPublishOfAClone(t *testing.T) {
	src := "0123456789abcdef01234567"
	require.True(t, NeedsSlot(&ent.Scene{ClonedFromID: &src}))
	require.False(t, NeedsSlot(&ent.Scene{ClonedFromID: &src, HoldsSplatSlot: true}), "published (and charged) before")
	require.False(t, NeedsSlot(&ent.Scene{HoldsSplatSlot: true}), "an upload holds its slot from its commit")

	within := &ent.ExternalUser{UsedBytes: 10, LimitBytes: 10}
	over := &ent.ExternalUser{UsedBytes: 11, LimitBytes: 10}
	require.NoError(t, StorageFits(within, &ent.Account{UsedBytes: 5, StorageBundleBytes: 5}, 3))
	require.Equal(t, http.StatusRequestEntityTooLarge, status(StorageFits(over, &ent.Account{}, 3)))
	err := StorageFits(within, &ent.Account{UsedBytes: 6, StorageBundleBytes: 5}, 3)
	require.Equal(t, http.StatusRequestEntityTooLarge, status(err))
	require.Equal(t, "account", apperr.From(err).Extra["scope"])
	require.NoError(t, StorageFits(within, &ent.Account{UsedBytes: 6, StorageBundleBytes: 5, Overage: true}, 3),
		"an account with overage may go over its bundle")
}
