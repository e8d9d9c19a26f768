package analytics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChangedNames: a live scene is written when ClickHouse lacks its name, holds another title
// or holds a tombstone; a scene gone from Postgres gets a tombstone newer than its last row,
// once; an unchanged title and an unknown gone scene write nothing.
func TestChangedNames(t *testing.T) {
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const (
		same, renamed, fresh, gone, buried, unknown = "aaaaaaaaaaaaaaaaaaaaaaa1", "aaaaaaaaaaaaaaaaaaaaaaa2",
			"aaaaaaaaaaaaaaaaaaaaaaa3", "aaaaaaaaaaaaaaaaaaaaaaa4", "aaaaaaaaaaaaaaaaaaaaaaa5", "aaaaaaaaaaaaaaaaaaaaaaa6"
	)
	name := func(id, title string, version uint64) SceneName {
		return SceneName{IntegrationID: "i1", SceneID: id, Title: title, CreatedAt: created, Version: version}
	}
	live := map[string]SceneName{same: name(same, "A", 5), renamed: name(renamed, "B2", 9), fresh: name(fresh, "C", 3)}
	far := uint64(time.Now().Add(time.Hour).UnixMicro())
	stored := map[string]SceneName{same: name(same, "A", 4), renamed: name(renamed, "B", 7), gone: name(gone, "D", far)}
	tomb := name(buried, "", 8)
	tomb.Deleted = true
	stored[buried] = tomb
	got := changedNames([]string{same, renamed, fresh, gone, buried, unknown}, live, stored)
	require.Len(t, got, 3)
	require.Equal(t, live[renamed], got[0])
	require.Equal(t, live[fresh], got[1])
	require.Equal(t, gone, got[2].SceneID)
	require.True(t, got[2].Deleted)
	require.Empty(t, got[2].Title, "a tombstone carries no name")
	require.Equal(t, "i1", got[2].IntegrationID)
	require.Equal(t, far+1, got[2].Version, "newer than the scene's last row even when that is ahead of this clock")
}

// TestNotifiedKeepsSceneIDs: a notice's scene id is kept for the next round; a malformed
// payload is ignored.
func TestNotifiedKeepsSceneIDs(t *testing.T) {
	n := &NameSync{heard: map[string]bool{}}
	n.notified("i1:0123456789abcdef01234567")
	n.notified("no colon")
	n.notified("i1:'; DROP TABLE x")
	require.Equal(t, map[string]bool{"0123456789abcdef01234567": true}, n.heard)
	require.Equal(t, "'0123456789abcdef01234567'", quoteIDs([]string{"0123456789abcdef01234567", "bad'"}))
}
