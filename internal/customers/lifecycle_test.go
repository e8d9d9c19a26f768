package customers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAutoKeepers: every live scene is kept while the usage fits; otherwise the most recently
// updated come first (then id), first fit, so a later smaller scene can still be kept after a
// larger one was skipped, and scenes without a slot (unpublished clones) never count against
// maxSplats.
func TestAutoKeepers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sc := func(id string, bytes int64, slot bool, ageHours int) *Scene {
		return &Scene{ID: id, Bytes: bytes, Slot: slot, UpdatedAt: t0.Add(-time.Duration(ageHours) * time.Hour)}
	}
	n := func(v int64) *int64 { return &v }
	live := []*Scene{sc("a", 100, true, 3), sc("b", 300, true, 1), sc("c", 50, true, 2), sc("d", 10, false, 4)}

	require.Equal(t, map[string]bool{"a": true, "b": true, "c": true, "d": true}, autoKeepers(live, 460, nil), "everything fits")
	require.Equal(t, map[string]bool{"a": true, "b": true, "c": true, "d": true}, autoKeepers(live, 460, n(3)), "d holds no slot")
	// 400 bytes: b (300, newest) then c (50) fit; a (100) would not; d (10) still does.
	require.Equal(t, map[string]bool{"b": true, "c": true, "d": true}, autoKeepers(live, 400, nil))
	// Two slots: b and c, the newest; d needs none.
	require.Equal(t, map[string]bool{"b": true, "c": true, "d": true}, autoKeepers(live, 1000, n(2)))
	require.Equal(t, map[string]bool{"d": true}, autoKeepers(live, 1000, n(0)))
	require.Empty(t, autoKeepers(live, 0, nil))
	// Equal update times: by id.
	tied := []*Scene{sc("y", 10, true, 1), sc("x", 10, true, 1)}
	require.Equal(t, map[string]bool{"x": true}, autoKeepers(tied, 10, nil))
}

// TestSortForRestore: protected first, then most recently archived, then id.
func TestSortForRestore(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) *time.Time { v := t0.Add(time.Duration(h) * time.Hour); return &v }
	scenes := []*Scene{
		{ID: "old", ArchivedAt: at(1)},
		{ID: "new", ArchivedAt: at(5)},
		{ID: "p-old", ArchivedAt: at(0), Protected: true},
		{ID: "b-tie", ArchivedAt: at(3)},
		{ID: "a-tie", ArchivedAt: at(3)},
		{ID: "p-new", ArchivedAt: at(9), Protected: true},
	}
	sortForRestore(scenes)
	var got []string
	for _, s := range scenes {
		got = append(got, s.ID)
	}
	require.Equal(t, []string{"p-new", "p-old", "new", "a-tie", "b-tie", "old"}, got)
}
