package scene

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
)

// TestScenePatchApply: the PATCH's fields land on the update, levelData null clears it, and a
// featured scene leaves the curated set exactly when the PATCH makes it private or
// non-embeddable.
func TestScenePatchApply(t *testing.T) {
	str := func(s string) *string { return &s }
	boolean := func(b bool) *bool { return &b }
	for _, tc := range []struct {
		name        string
		featured    bool
		p           scenePatch
		unfeature   bool
		clearsLevel bool
	}{
		{name: "title only", featured: true, p: scenePatch{title: str("T")}},
		{name: "made private", featured: true, p: scenePatch{visibility: str("private")}, unfeature: true},
		{name: "made public", featured: true, p: scenePatch{visibility: str("public")}},
		{name: "embedding off", featured: true, p: scenePatch{allowEmbed: boolean(false)}, unfeature: true},
		{name: "embedding on", featured: true, p: scenePatch{allowEmbed: boolean(true)}},
		{name: "private, not featured", p: scenePatch{visibility: str("private")}},
		{name: "levelData cleared", p: scenePatch{hasLevelData: true}, clearsLevel: true},
		{name: "levelData set", p: scenePatch{hasLevelData: true, levelData: map[string]any{"v": 1.0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := &ent.Scene{Featured: tc.featured}
			up := ent.NewClient().Scene.UpdateOne(cur)
			tc.p.apply(cur, up)
			m := up.Mutation()
			f, set := m.Featured()
			require.Equal(t, tc.unfeature, set && !f, "featured cleared")
			if tc.p.title != nil {
				got, _ := m.Title()
				require.Equal(t, *tc.p.title, got)
			}
			if tc.p.visibility != nil {
				got, _ := m.Visibility()
				require.EqualValues(t, *tc.p.visibility, got)
			}
			require.Equal(t, tc.clearsLevel, m.LevelDataCleared())
			if tc.p.levelData != nil {
				got, _ := m.LevelData()
				require.Equal(t, tc.p.levelData, got)
			}
		})
	}
}
