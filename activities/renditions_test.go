package activities

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/media"
	"github.com/splathost/splathost/workflows/contract"
)

// TestContractCameraIsMediaCamera: the contract's Camera converts to media.Camera as it is and
// has its JSON, so the camera in recorded rendition histories (media.Camera's, before the
// contract had its own) reads the same.
func TestContractCameraIsMediaCamera(t *testing.T) {
	c := contract.Camera{Position: [3]float64{1, 2, 3}, Target: [3]float64{4, 5, 6}, FOV: 40}
	got, err := json.Marshal(c)
	require.NoError(t, err)
	was, err := json.Marshal(media.Camera(c))
	require.NoError(t, err)
	require.JSONEq(t, `{"Position":[1,2,3],"Target":[4,5,6],"FOV":40}`, string(got))
	require.JSONEq(t, string(was), string(got))
}

// TestRenditionFormatSpellsEntsTypes: the contract spells the scene types out as ent stores
// them (it may not import ent), so a scene row's SplatType reaches RenditionFormat unchanged.
func TestRenditionFormatSpellsEntsTypes(t *testing.T) {
	require.Equal(t, "file", string(scene.SplatTypeFile), "RenditionFormat spells ent's file type out")
	_, ok := contract.RenditionFormat(string(scene.SplatTypeFile), "k/a.ply")
	require.True(t, ok)
	_, ok = contract.RenditionFormat(string(scene.SplatTypeLod), "k/a.ply")
	require.False(t, ok)
	f, ok := contract.PosterFormat(string(scene.SplatTypeLod), "k/lod-meta.json")
	require.True(t, ok, "PosterFormat spells ent's lod type out")
	require.Equal(t, "lod", f)
}

// TestTrimMessageFitsTheColumn: a failure message is cut to the column's bound in bytes (ent's
// MaxLen), on a rune boundary, so recording it can never fail validation.
func TestTrimMessageFitsTheColumn(t *testing.T) {
	require.Equal(t, "the rendition failed", trimMessage(""))
	require.Equal(t, "short", trimMessage("short"))
	exact := strings.Repeat("a", maxMessage)
	require.Equal(t, exact, trimMessage(exact))
	for _, long := range []string{strings.Repeat("a", 2000), strings.Repeat("é", 400), strings.Repeat("✗x", 300)} {
		got := trimMessage(long)
		require.LessOrEqual(t, len(got), maxMessage)
		require.True(t, utf8.ValidString(got), got)
		require.True(t, strings.HasSuffix(got, "…"))
	}
}

// TestLevelView reads the poster's view from a validated levelData, and ignores what it
// cannot read rather than guessing.
func TestLevelView(t *testing.T) {
	o, c, b := levelView(map[string]any{
		"orientation": map[string]any{"rotation": []any{0.0, 90.0, 0.0}},
		"camera":      map[string]any{"position": []any{1.0, 2.0, 3.0}, "target": []any{0.0, 0.0, 0.0}, "fov": 40.0},
		"background":  map[string]any{"color": "#3366cc"},
	})
	require.Equal(t, &[3]float64{0, 90, 0}, o)
	require.Equal(t, &contract.Camera{Position: [3]float64{1, 2, 3}, FOV: 40}, c)
	require.Equal(t, &[3]uint8{0x33, 0x66, 0xcc}, b)
	o, c, b = levelView(map[string]any{"orientation": map[string]any{"rotation": []any{1.0}},
		"camera": map[string]any{"position": []any{1.0, 2.0, "x"}, "target": []any{0.0, 0.0, 0.0}}, "background": map[string]any{"color": "blue"}})
	require.Nil(t, o)
	require.Nil(t, c)
	require.Nil(t, b)
	o, c, b = levelView(nil)
	require.Nil(t, o)
	require.Nil(t, c)
	require.Nil(t, b)
}
