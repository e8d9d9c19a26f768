package scene

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
)

// TestLevelDataV1: every field of levelData version 1 (leveldata.go), valid and invalid, through
// the editor PATCH's parser, which is how a body reaches the rules. An invalid levelData is a
// 400 whose issues name the field path.
func TestLevelDataV1(t *testing.T) {
	cam := `{"position":[0,1,5],"target":[0,0,0]}`
	ann := func(fields string) string {
		return `{"annotations":[{"id":"a1","position":[1,2,3],"title":"Door"` + fields + `}]}`
	}
	many := make([]string, 201)
	for i := range many {
		many[i] = fmt.Sprintf(`{"id":"a%d","position":[0,0,0],"title":"t"}`, i)
	}
	tests := []struct {
		name, ld string
		issue    string // "" means valid
	}{
		{"empty", `{}`, ""},
		{"everything", `{"version":1,"camera":{"position":[0,1,5],"target":[0,0,0],"fov":60},
			"annotations":[{"id":"door_1","position":[1,2,3],"title":"Door","text":"Front door","camera":{"position":[1,2,6],"target":[1,2,3],"fov":40}},
			               {"id":"B-2","position":[-1,0,0],"title":"é"}],
			"background":{"color":"#A0b1C2"},"post":{"exposure":-2.5,"toneMapping":"aces"},
			"audio":{"url":"https://x/a.mp3","loop":true,"volume":0.5},"orientation":{"rotation":[90,-180,360]}}`, ""},
		{"unknown keys kept at every level", `{"grid":true,"camera":{"position":[0,0,1],"target":[0,0,0],"roll":3},"post":{"bloom":1}}`, ""},
		{"version 1.0 is 1", `{"version":1.0}`, ""},
		{"bounds are inclusive", `{"camera":{"position":[0,0,1],"target":[0,0,0],"fov":179},"post":{"exposure":10},"audio":{"url":"u","volume":0},"orientation":{"rotation":[-360,0,0]}}`, ""},
		{"post and audio fields are optional", `{"post":{},"audio":{"url":"u"}}`, ""},
		{"huge finite coordinates", `{"camera":{"position":[1e300,0,0],"target":[-1e300,0,0]}}`, ""},
		{"exactly 200 annotations", `{"annotations":[` + strings.Join(many[:200], ",") + `]}`, ""},
		{"empty annotation text", ann(`,"text":""`), ""},

		{"version 2", `{"version":2}`, "levelData.version: must be 1"},
		{"version string", `{"version":"1"}`, "levelData.version: must be 1"},
		{"version null", `{"version":null}`, "levelData.version: must be 1"},
		{"camera not an object", `{"camera":[0,1,2]}`, "levelData.camera: must be an object"},
		{"camera null", `{"camera":null}`, "levelData.camera: must be an object"},
		{"camera without target", `{"camera":{"position":[0,1,2]}}`, "levelData.camera.target: required"},
		{"camera without position", `{"camera":{"target":[0,1,2]}}`, "levelData.camera.position: required"},
		{"camera looking at itself", `{"camera":{"position":[1,1,1],"target":[1,1,1]}}`, "levelData.camera.target: must differ from position"},
		{"position of 2", `{"camera":{"position":[0,1],"target":[0,0,0]}}`, "levelData.camera.position: must be an array of 3 numbers"},
		{"position of 4", `{"camera":{"position":[0,1,2,3],"target":[0,0,0]}}`, "levelData.camera.position: must be an array of 3 numbers"},
		{"position of strings", `{"camera":{"position":["0","1","2"],"target":[0,0,0]}}`, "levelData.camera.position: must be an array of 3 finite numbers"},
		{"position with null", `{"camera":{"position":[0,null,2],"target":[0,0,0]}}`, "levelData.camera.position: must be an array of 3 finite numbers"},
		{"position an object", `{"camera":{"position":{"x":1},"target":[0,0,0]}}`, "levelData.camera.position: must be an array of 3 numbers"},
		{"fov 0", `{"camera":` + cam[:len(cam)-1] + `,"fov":0}}`, "levelData.camera.fov: must be within 1..179"},
		{"fov 180", `{"camera":` + cam[:len(cam)-1] + `,"fov":180}}`, "levelData.camera.fov: must be within 1..179"},
		{"fov string", `{"camera":` + cam[:len(cam)-1] + `,"fov":"60"}}`, "levelData.camera.fov: must be a number"},
		{"annotations not an array", `{"annotations":{}}`, "levelData.annotations: must be an array"},
		{"too many annotations", `{"annotations":[` + strings.Join(many, ",") + `]}`, "levelData.annotations: must have at most 200 entries, got 201"},
		{"annotation not an object", `{"annotations":[1]}`, "levelData.annotations[0]: must be an object"},
		{"annotation without id", `{"annotations":[{"position":[0,0,0],"title":"t"}]}`, "levelData.annotations[0].id: required"},
		{"annotation id with a space", `{"annotations":[{"id":"a b","position":[0,0,0],"title":"t"}]}`, "levelData.annotations[0].id: must be 1-64 characters"},
		{"annotation id of 65", `{"annotations":[{"id":"` + strings.Repeat("a", 65) + `","position":[0,0,0],"title":"t"}]}`, "levelData.annotations[0].id: must be 1-64"},
		{"annotation id a number", `{"annotations":[{"id":1,"position":[0,0,0],"title":"t"}]}`, "levelData.annotations[0].id: must be a string"},
		{"duplicate ids", `{"annotations":[{"id":"a","position":[0,0,0],"title":"t"},{"id":"a","position":[0,0,0],"title":"u"}]}`, "levelData.annotations[1].id: duplicates annotations[0].id"},
		{"annotation without position", `{"annotations":[{"id":"a","title":"t"}]}`, "levelData.annotations[0].position: required"},
		{"annotation without title", `{"annotations":[{"id":"a","position":[0,0,0]}]}`, "levelData.annotations[0].title: required"},
		{"blank title", ann(`,"title":"   "`), "levelData.annotations[0].title: must be 1-120 characters, not blank"},
		{"title of 121", `{"annotations":[{"id":"a","position":[0,0,0],"title":"` + strings.Repeat("é", 121) + `"}]}`, "levelData.annotations[0].title: must be 1-120"},
		{"text of 2001", ann(`,"text":"` + strings.Repeat("x", 2001) + `"`), "levelData.annotations[0].text: must be at most 2000 characters"},
		{"text not a string", ann(`,"text":false`), "levelData.annotations[0].text: must be a string"},
		{"annotation camera broken", ann(`,"camera":{"position":[0,0,0]}`), "levelData.annotations[0].camera.target: required"},
		{"background colour short", `{"background":{"color":"#fff"}}`, "levelData.background.color: must be a colour '#rrggbb'"},
		{"background colour a name", `{"background":{"color":"red"}}`, "levelData.background.color: must be a colour"},
		{"background without colour", `{"background":{}}`, "levelData.background.color: required"},
		{"exposure too high", `{"post":{"exposure":10.5}}`, "levelData.post.exposure: must be within -10..10"},
		{"exposure a string", `{"post":{"exposure":"1"}}`, "levelData.post.exposure: must be a number"},
		{"tone mapping unknown", `{"post":{"toneMapping":"filmic"}}`, "levelData.post.toneMapping: must be one of 'linear', 'aces', 'neutral'"},
		{"audio without url", `{"audio":{"loop":true}}`, "levelData.audio.url: required"},
		{"audio url empty", `{"audio":{"url":""}}`, "levelData.audio.url: must be 1-4096 characters"},
		{"audio loop a string", `{"audio":{"url":"u","loop":"yes"}}`, "levelData.audio.loop: must be a boolean"},
		{"audio volume over 1", `{"audio":{"url":"u","volume":1.01}}`, "levelData.audio.volume: must be within 0..1"},
		{"audio volume negative", `{"audio":{"url":"u","volume":-0.1}}`, "levelData.audio.volume: must be within 0..1"},
		{"orientation without rotation", `{"orientation":{}}`, "levelData.orientation.rotation: required"},
		{"orientation past 360", `{"orientation":{"rotation":[361,0,0]}}`, "levelData.orientation.rotation: each angle must be within -360..360"},
		{"orientation of 2", `{"orientation":{"rotation":[180,0]}}`, "levelData.orientation.rotation: must be an array of 3 numbers"},
		{"number beyond float64", `{"camera":{"position":[1e400,0,0],"target":[0,0,0]}}`, "levelData.camera.position[0]: number out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseScenePatch([]byte(`{"levelData":`+tt.ld+`}`), true)
			if tt.issue == "" {
				require.NoError(t, err)
				require.True(t, p.hasLevelData)
				var want map[string]any
				require.NoError(t, json.Unmarshal([]byte(tt.ld), &want))
				require.Equal(t, want, p.levelData, "stored as sent, unknown keys included")
				return
			}
			e := require400(t, err)
			require.Nil(t, p)
			require.Truef(t, strings.Contains(strings.Join(e.Issues, "\n"), tt.issue), "issues %q, want %q", e.Issues, tt.issue)
			// The editor commit applies the same rules.
			_, err = parseCommit([]byte(`{"title":"t","splatUrl":"x","levelData":`+tt.ld+`}`), true)
			require.Equal(t, e.Issues, apperr.From(err).Issues)
		})
	}
}

// TestLevelDataIssuesAreBounded: a levelData broken everywhere answers with at most 20 issues
// and says more were left out.
func TestLevelDataIssuesAreBounded(t *testing.T) {
	bad := make([]string, 100)
	for i := range bad {
		bad[i] = `{"id":"x y"}`
	}
	var ld map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"annotations":[`+strings.Join(bad, ",")+`]}`), &ld))
	issues := levelDataIssues(ld)
	require.Len(t, issues, maxLevelDataIssues+1)
	require.Equal(t, "levelData: further problems omitted", issues[maxLevelDataIssues])
}

// TestSeedCamera: a commit's initialCameraPosition and initialCameraRotation (pitch, yaw, roll)
// become levelData.camera when levelData has none.
func TestSeedCamera(t *testing.T) {
	tests := []struct {
		name          string
		pos, rot      []float64
		wantTarget    []any
		levelData     map[string]any
		wantUnchanged bool
	}{
		{name: "no rotation looks down -Z", pos: []float64{1, 2, 3}, wantTarget: []any{1.0, 2.0, 2.0}},
		{name: "zero rotation", pos: []float64{0, 0, 0}, rot: []float64{0, 0, 0}, wantTarget: []any{0.0, 0.0, -1.0}},
		{name: "yaw 90 turns to -X", pos: []float64{0, 0, 0}, rot: []float64{0, 90, 0}, wantTarget: []any{-1.0, 0.0, 0.0}},
		{name: "yaw -90 turns to +X", pos: []float64{0, 0, 0}, rot: []float64{0, -90, 0}, wantTarget: []any{1.0, 0.0, 0.0}},
		{name: "yaw 180 looks down +Z", pos: []float64{0, 0, 0}, rot: []float64{0, 180, 0}, wantTarget: []any{0.0, 0.0, 1.0}},
		{name: "positive pitch looks up", pos: []float64{0, 0, 0}, rot: []float64{90, 0, 0}, wantTarget: []any{0.0, 1.0, 0.0}},
		{name: "pitch 45 yaw 90", pos: []float64{0, 0, 0}, rot: []float64{45, 90, 0},
			wantTarget: []any{-math.Round(math.Sqrt2/2*1e9) / 1e9, math.Round(math.Sqrt2/2*1e9) / 1e9, 0.0}},
		{name: "roll is ignored", pos: []float64{0, 0, 0}, rot: []float64{0, 0, 77}, wantTarget: []any{0.0, 0.0, -1.0}},
		{name: "other keys kept", pos: []float64{0, 0, 0}, levelData: map[string]any{"background": map[string]any{"color": "#000000"}},
			wantTarget: []any{0.0, 0.0, -1.0}},
		{name: "a camera wins", pos: []float64{0, 0, 0}, levelData: map[string]any{"camera": map[string]any{"fov": 3.0}}, wantUnchanged: true},
		{name: "rotation alone seeds nothing", rot: []float64{10, 20, 0}, wantUnchanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := seedCamera(tt.levelData, tt.pos, tt.rot)
			if tt.wantUnchanged {
				require.Equal(t, tt.levelData, got)
				return
			}
			require.Equal(t, 1.0, got["version"])
			cam := got["camera"].(map[string]any)
			require.Equal(t, []any{tt.pos[0], tt.pos[1], tt.pos[2]}, cam["position"])
			require.Equal(t, tt.wantTarget, cam["target"])
			require.NotContains(t, cam, "fov")
			for k, v := range tt.levelData {
				require.Equal(t, v, got[k])
			}
			require.Empty(t, levelDataIssues(got), "a seeded levelData is valid v1")
		})
	}
}

// TestCommitCameraArrays: initialCameraPosition and initialCameraRotation are arrays of exactly
// three finite numbers; a null element is not 0; a number beyond the doubles is named by the
// decoder at its place.
func TestCommitCameraArrays(t *testing.T) {
	for _, field := range []string{"initialCameraPosition", "initialCameraRotation"} {
		_, err := parseCommit([]byte(`{"title":"t","splatUrl":"x","`+field+`":[0,1e999,0]}`), false)
		require.Equal(t, []string{field + "[1]: " + httpx.NumberRangeProblem}, require400(t, err).Issues)
	}
	for _, bad := range []string{`[0,null,1]`, `[null,null,null]`, `[1,2]`, `[1,2,3,4]`, `"1,2,3"`, `{"x":1}`, `["1",2,3]`, `[true,0,0]`} {
		for _, field := range []string{"initialCameraPosition", "initialCameraRotation"} {
			_, err := parseCommit([]byte(`{"title":"t","splatUrl":"x","`+field+`":`+bad+`}`), false)
			e := require400(t, err)
			require.Len(t, e.Issues, 1, bad)
			require.True(t, strings.HasPrefix(e.Issues[0], field+": must be"), "%s %s: %v", field, bad, e.Issues)
		}
	}
	r, err := parseCommit([]byte(`{"title":"t","splatUrl":"x","initialCameraPosition":[0,-1.5,2e3],"initialCameraRotation":null}`), false)
	require.NoError(t, err)
	require.Equal(t, []float64{0, -1.5, 2000}, r.cameraPosition)
	require.Nil(t, r.cameraRotation)
}
