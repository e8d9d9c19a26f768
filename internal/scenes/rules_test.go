package scenes

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/account"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/objectkeys"
)

// status is the HTTP status err answers with (0 for nil).
func status(err error) int {
	if err == nil {
		return 0
	}
	return apperr.From(err).Status
}

// TestItemColumnsLeaveOutLevelData: list and trending items are read with ItemColumns, every
// scene column but level_data.
func TestItemColumnsLeaveOutLevelData(t *testing.T) {
	require.NotContains(t, ItemColumns, scene.FieldLevelData)
	require.Len(t, ItemColumns, len(scene.Columns)-1)
	for _, c := range scene.Columns {
		if c != scene.FieldLevelData {
			require.Contains(t, ItemColumns, c)
		}
	}
}

func TestApplyFeatured(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	public := func() *ent.Scene { return &ent.Scene{Visibility: scene.VisibilityPublic, AllowEmbed: true} }

	t.Run("private or not embeddable is 409, unchanged", func(t *testing.T) {
		for _, sc := range []*ent.Scene{{Visibility: scene.VisibilityPrivate, AllowEmbed: true}, {Visibility: scene.VisibilityPublic}} {
			changed, err := ApplyFeatured(sc, true, now)
			require.Equal(t, http.StatusConflict, status(err))
			require.False(t, changed)
			require.False(t, sc.Featured)
			require.Nil(t, sc.FeaturedAt)
		}
	})
	t.Run("unfeaturing a private scene is allowed", func(t *testing.T) {
		sc := &ent.Scene{Visibility: scene.VisibilityPrivate, Featured: true, FeaturedAt: &earlier}
		changed, err := ApplyFeatured(sc, false, now)
		require.NoError(t, err)
		require.True(t, changed)
		require.False(t, sc.Featured)
		require.Equal(t, &earlier, sc.FeaturedAt, "featuredAt keeps the first featuring")
	})
	t.Run("first featuring sets featuredAt", func(t *testing.T) {
		sc := public()
		changed, err := ApplyFeatured(sc, true, now)
		require.NoError(t, err)
		require.True(t, changed)
		require.True(t, sc.Featured)
		require.Equal(t, now, *sc.FeaturedAt)
	})
	t.Run("featuring again keeps the first featuredAt", func(t *testing.T) {
		sc := public()
		sc.FeaturedAt = &earlier
		changed, err := ApplyFeatured(sc, true, now)
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, earlier, *sc.FeaturedAt)
	})
	t.Run("the state it has already is no change", func(t *testing.T) {
		sc := public()
		sc.Featured, sc.FeaturedAt = true, &earlier
		changed, err := ApplyFeatured(sc, true, now)
		require.NoError(t, err)
		require.False(t, changed)
		changed, err = ApplyFeatured(&ent.Scene{}, false, now)
		require.NoError(t, err)
		require.False(t, changed)
	})
}

func TestRetryFolder(t *testing.T) {
	sc := &ent.Scene{ID: "0123456789abcdef01234567", IntegrationID: "aaaaaaaaaaaaaaaaaaaaaaaa", OwnerID: "bbbbbbbbbbbbbbbbbbbbbbbb",
		SplatType: scene.SplatTypeFile, SplatURL: "https://assets.example/x/scene.ply"}
	folder, err := RetryFolder(sc)
	require.NoError(t, err)
	require.Equal(t, objectkeys.RenditionFolder(sc.IntegrationID, sc.OwnerID, sc.ID), folder)

	kept := "some/earlier/folder"
	sc.RenditionPrefix = &kept
	folder, err = RetryFolder(sc)
	require.NoError(t, err)
	require.Equal(t, kept, folder, "a scene that names its folder is built into it again")

	// A .sog and a LOD folder have no rendition: only their poster is redone, while they have
	// no image.
	sog := &ent.Scene{SplatType: scene.SplatTypeFile, SplatURL: "https://assets.example/x/scene.sog", ImageURL: "https://assets.example/x/a.jpg"}
	_, err = RetryFolder(sog)
	require.Equal(t, http.StatusConflict, status(err), "a .sog with an image has nothing to redo")
	lod := &ent.Scene{SplatType: scene.SplatTypeLod, SplatURL: "https://assets.example/x/lod-meta.json", LodFolderKey: &kept, ImageURL: "https://assets.example/x/a.jpg"}
	_, err = RetryFolder(lod)
	require.Equal(t, http.StatusConflict, status(err), "a LOD folder with an image has nothing to redo")
	lod.ImageURL, lod.RenditionPrefix = "", &kept
	folder, err = RetryFolder(lod)
	require.NoError(t, err, "a LOD folder without image gets its poster again")
	require.Equal(t, kept, folder)
	_, err = RetryFolder(&ent.Scene{SplatType: scene.SplatTypeFile, SplatURL: "https://assets.example/x/scene.bin"})
	require.Equal(t, http.StatusConflict, status(err))
}

func TestOpenForParts(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Minute), now.Add(time.Minute)
	require.NoError(t, OpenForParts(&ent.UploadTicket{ExpiresAt: future}, now))
	require.NoError(t, OpenForParts(&ent.UploadTicket{ExpiresAt: past, MultipartCompletedAt: &past}, now),
		"a completed upload answers after its window too (a retried complete)")
	err := OpenForParts(&ent.UploadTicket{ExpiresAt: past}, now)
	require.Equal(t, http.StatusBadRequest, status(err))
	require.Contains(t, apperr.From(err).Issues[0], "2026-05-01T11:59:00.000Z")
	require.Equal(t, http.StatusConflict, status(OpenForParts(&ent.UploadTicket{ExpiresAt: future, CommittedAt: &past}, now)))
}

func TestAbortable(t *testing.T) {
	now := time.Now()
	require.NoError(t, Abortable(&ent.UploadTicket{}))
	require.Equal(t, http.StatusConflict, status(Abortable(&ent.UploadTicket{CommittedAt: &now})))
}

func TestMayClone(t *testing.T) {
	for _, p := range []account.Plan{account.PlanPro, account.PlanEnterprise} {
		require.NoError(t, MayClone(p), p)
	}
	for _, p := range []account.Plan{account.PlanFree, "unknown"} {
		err := MayClone(p)
		require.Equal(t, http.StatusForbidden, status(err), p)
		require.Equal(t, "cloning", apperr.From(err).Extra["dimension"])
	}
}

func TestReleased(t *testing.T) {
	require.Equal(t, int64(42), Released(&ent.Scene{FileSizeBytes: 42, HoldsSplatSlot: true}).Bytes)
	require.True(t, Released(&ent.Scene{HoldsSplatSlot: true}).Slot)
	require.False(t, Released(&ent.Scene{}).Slot, "a scene without a slot releases none")
}
