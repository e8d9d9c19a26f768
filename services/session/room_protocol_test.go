package session

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
)

func TestShownName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Ada", "Ada"},
		{"  Ada Lovelace  ", "Ada Lovelace"},
		// Cut at 32 characters, not bytes: each of these is two or four bytes.
		{strings.Repeat("é", 40), strings.Repeat("é", 32)},
		{strings.Repeat("🎨", 33), strings.Repeat("🎨", 32)},
		{"Ada\u0000\u0007\u001b[31m", "Ada[31m"},
		// A right-to-left override could make the name read as something else.
		{"\u202eevil\u202c", "evil"},
		{"line\u2028break", "linebreak"},
		// Nothing shown is left: the participant is a guest.
		{"\u0007\u200b", ""},
		// Cut first, then trimmed: no trailing space from the cut.
		{strings.Repeat("a", 31) + " b", strings.Repeat("a", 31)},
	} {
		require.Equal(t, tt.want, shownName(tt.in), "%q", tt.in)
	}
}

func TestLowestFreeGuestNumber(t *testing.T) {
	require.Equal(t, 1, lowestFree(map[int]bool{}))
	require.Equal(t, 2, lowestFree(map[int]bool{1: true, 3: true}))
	require.Equal(t, 4, lowestFree(map[int]bool{1: true, 2: true, 3: true}))
}

func TestPickColourIsDistinctUntilThePaletteRunsOut(t *testing.T) {
	used := map[string]bool{}
	for i := 0; i < len(palette); i++ {
		c := pickColour(used, "id")
		require.False(t, used[c])
		used[c] = true
	}
	require.Regexp(t, `^#[0-9a-f]{6}$`, pickColour(used, "another id"))
}

func TestParseInbound(t *testing.T) {
	ok := []string{
		`{"type":"ping"}`,
		`{"type":"edit","fields":{"title":""}}`,
		`{"type":"edit","fields":{"title":"T","description":"d","visibility":"public","allowComments":false,"allowReactions":true,"levelData":{"camera":null,"x":[1,2]}}}`,
		`{"type":"camera","camera":{"position":[0,1,2],"target":[0,0,0]}}`,
		`{"type":"camera","camera":{"position":[0,1,2],"target":[0,0,0],"fov":60}}`,
		`{"type":"edit","fields":{"title":"` + strings.Repeat("é", 200) + `","levelData":{"camera":{"position":[1e300,-2.5E-3,0]}}}}`,
	}
	for _, m := range ok {
		_, err := parseInbound([]byte(m))
		require.NoError(t, err, m)
	}
	bad := []string{
		``, `[]`, `"edit"`, `{}`, `{"type":"nope"}`, `{"type":"ping","extra":1}`,
		`{"type":"edit"}`, `{"type":"edit","fields":{}}`, `{"type":"edit","fields":{"featured":true}}`,
		`{"type":"edit","fields":{"title":5}}`, `{"type":"edit","fields":{"title":null}}`,
		`{"type":"edit","fields":{"visibility":"unlisted"}}`, `{"type":"edit","fields":{"levelData":[1]}}`,
		`{"type":"edit","fields":{"levelData":null}}`, `{"type":"edit","fields":{"title":"a\u0000b"}}`,
		`{"type":"camera","camera":{"position":[0,1],"target":[0,0,0]}}`,
		`{"type":"camera","camera":{"position":[0,1,2],"target":[0,0,0],"fov":180}}`,
		`{"type":"camera","camera":{"position":[0,1,2],"target":[0,0,"x"]}}`,
		`{"type":"camera","camera":{"position":[0,1,2],"target":[0,0,0],"zoom":1}}`,
		`{"type":"edit","fields":{"title":"` + strings.Repeat("t", 201) + `"}}`,
		`{"type":"edit","fields":{"description":"` + strings.Repeat("d", 2001) + `"}}`,
		`{"type":"edit","fields":{"levelData":{"post":{"exposure":1e400}}}}`,
		`{"type":"camera","camera":{"position":[0,1,2e999],"target":[0,0,0]}}`,
		`{"type":"camera","camera":null}`, `{"type":5}`,
		`{"type":"edit","fields":{"levelData":{"deep":` + strings.Repeat("[", 80) + strings.Repeat("]", 80) + `}}}`,
	}
	for _, m := range bad {
		_, err := parseInbound([]byte(m))
		require.Error(t, err, m)
	}
}

// Every message only the server sends is refused as such, whatever it carries; it is never
// parsed as something to relay.
func TestParseInboundServerOnly(t *testing.T) {
	for _, m := range []string{
		`{"type":"saved","splat":{"id":"0123456789abcdef01234567","title":"Taken over"}}`,
		`{"type":"saved"}`, `{"type":"welcome","draft":{}}`, `{"type":"published"}`, `{"type":"error"}`,
		`{"type":"join"}`, `{"type":"leave","id":"x"}`, `{"type":"pong"}`,
	} {
		in, err := parseInbound([]byte(m))
		require.NoError(t, err, m)
		require.Equal(t, kindServerOnly, in.kind, m)
	}
}

// Issues name the field, as a REST body's do.
func TestParseInboundIssuesNameTheField(t *testing.T) {
	for frame, issue := range map[string]string{
		`{"type":"edit","fields":{"levelData":{"camera":{"position":[0,1e400,0]}}}}`: "fields.levelData.camera.position[1]: number out of range (must be 0 or a finite double of magnitude 2.2250738585072014e-308 to 1.7976931348623157e308)",
		`{"type":"camera","camera":{"position":[0,0,0],"target":[0,0,0],"zoom":1}}`:  "camera.zoom: unknown field",
		`{"type":"camera","camera":{"position":[0,0],"target":[0,0,0]}}`:             "camera.position: must be [x, y, z] of finite numbers",
		`{"type":"camera","camera":{"position":[0,0,0],"target":[0,0,0],"fov":0}}`:   "camera.fov: must be a number of degrees, 1-179",
		`{"type":"edit","fields":{"title":"` + strings.Repeat("t", 201) + `"}}`:      "fields.title: must be at most 200 characters",
		`{"type":"edit","fields":{"allowComments":"yes"}}`:                           "fields.allowComments: must be a boolean",
		`{"type":"edit","fields":{"title":"x"},"extra":1}`:                           "extra: unknown field",
		`{"type":"takeover"}`: "type: must be one of 'edit', 'camera', 'ping'",
	} {
		_, err := parseInbound([]byte(frame))
		require.Error(t, err, frame)
		require.Contains(t, apperr.From(err).Issues, issue, frame)
		require.Contains(t, string(errorFrame(apperr.From(err))), `"issues":[`, frame)
	}
}

func TestJSONDepthSkipsStrings(t *testing.T) {
	require.Equal(t, 0, jsonDepth([]byte(`"[[[["`)))
	require.Equal(t, 2, jsonDepth([]byte(`{"a":["[\"{{"]}`)))
	require.Equal(t, 3, jsonDepth([]byte(`[[[]],[]]`)))
}
