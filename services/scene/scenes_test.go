package scene

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
)

func patchIssues(t *testing.T, body string) []string {
	t.Helper()
	_, err := parseScenePatch([]byte(body), false)
	require.Error(t, err, body)
	e := apperr.From(err)
	require.Equal(t, http.StatusBadRequest, e.Status, body)
	require.NotEmpty(t, e.Issues, body)
	return e.Issues
}

func TestParseScenePatchFields(t *testing.T) {
	p, err := parseScenePatch([]byte(`{"title":"  Hello  ","description":"","visibility":"public",
		"allowEmbed":false,"allowClone":true,"allowComments":false,"allowReactions":true}`), false)
	require.NoError(t, err)
	require.Equal(t, "Hello", *p.title)
	require.Equal(t, "", *p.description, `"" clears the description`)
	require.Equal(t, "public", *p.visibility)
	require.False(t, *p.allowEmbed)
	require.True(t, *p.allowClone)
	require.False(t, *p.allowComments)
	require.True(t, *p.allowReactions)
	require.Nil(t, p.featured)

	p, err = parseScenePatch([]byte(`{"description":"x"}`), false)
	require.NoError(t, err)
	require.Nil(t, p.title, "omitted fields stay untouched")
	require.Nil(t, p.visibility)
	require.Nil(t, p.allowEmbed)

	p, err = parseScenePatch([]byte(`{"featured":true}`), false)
	require.NoError(t, err)
	require.True(t, *p.featured)
	p, err = parseScenePatch([]byte(`{"featured":false}`), false)
	require.NoError(t, err)
	require.False(t, *p.featured)

	// 200 characters after trimming, counted in characters, not bytes.
	p, err = parseScenePatch([]byte(`{"title":" `+strings.Repeat("é", 200)+` "}`), false)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("é", 200), *p.title)
	_, err = parseScenePatch([]byte(`{"description":"`+strings.Repeat("é", 2000)+`"}`), false)
	require.NoError(t, err)
}

func TestParseScenePatchRejects(t *testing.T) {
	for _, tt := range []struct{ body, issue string }{
		{``, "body: at least one of"},
		{`{}`, "body: at least one of"},
		{`[]`, "body: must be a JSON object"},
		{`{"title":`, "body: malformed JSON"},
		{`{"title":"   "}`, "title: must be 1-200 characters after trimming"},
		{`{"title":""}`, "title: must be 1-"},
		{`{"title":"` + strings.Repeat("a", 201) + `"}`, "title: must be 1-200 characters after trimming"},
		{`{"title":5}`, "title: must be a string"},
		{`{"title":null}`, "title: must not be null"},
		{`{"description":"` + strings.Repeat("a", 2001) + `"}`, "description: must be at most 2000 characters"},
		{`{"description":null}`, "description: must not be null"},
		{`{"visibility":"unlisted"}`, "visibility: must be one of 'private', 'public'"},
		{`{"allowEmbed":"yes"}`, "allowEmbed: must be a boolean"},
		{`{"allowClone":1}`, "allowClone: must be a boolean"},
		{`{"allowComments":null}`, "allowComments: must not be null"},
		{`{"allowReactions":"true"}`, "allowReactions: must be a boolean"},
		{`{"featured":"true"}`, "featured: must be a boolean"},
		{`{"featured":true,"title":"x"}`, "featured: must be the only field"},
		{`{"featured":false,"visibility":"public"}`, "featured: must be the only field"},
		{`{"name":"x"}`, "name: unknown field"},
	} {
		issues := patchIssues(t, tt.body)
		found := false
		for _, i := range issues {
			found = found || strings.Contains(i, tt.issue)
		}
		require.True(t, found, "%s: want an issue containing %q, got %v", tt.body, tt.issue, issues)
	}
}

func TestCloneWaitBudget(t *testing.T) {
	budget := 5 * time.Second
	for _, tt := range []struct {
		prefer string
		want   time.Duration
	}{
		{"", budget},
		{"respond-async", 0},
		{"Respond-Async, wait=3", 0},
		{"wait=2", 2 * time.Second},
		{"wait=60", budget},
		{"wait=abc", budget},
		{"wait=-1", budget},
		{"handling=lenient", budget},
	} {
		require.Equal(t, tt.want, waitBudget(tt.prefer, budget), tt.prefer)
	}
}

// TestEditorPatchLevelDataAndFeatured: the editor embed's PATCH takes levelData (object or
// null, at most 256 KiB serialized, storable in jsonb) and refuses featured with a 403; the v1
// PATCH knows no levelData.
func TestEditorPatchLevelDataAndFeatured(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", maxLevelData-8) + `"}` // exactly 256 KiB
	deep := strings.Repeat(`{"a":`, maxLevelDataDepth) + "1" + strings.Repeat("}", maxLevelDataDepth)
	tests := []struct {
		name, body string
		status     int
		issue      string
	}{
		{name: "object", body: `{"levelData":{"camera":{"position":[0,1,2],"target":[0,0,0]},"n":null}}`},
		{name: "null clears", body: `{"levelData":null}`},
		{name: "with metadata", body: `{"title":"t","levelData":{}}`},
		{name: "exactly the limit", body: `{"levelData":` + big + `}`},
		{name: "whitespace is not counted", body: `{"levelData":{ "a" : 1 ` + strings.Repeat(" ", maxLevelData) + `}}`},
		{name: "64 levels", body: `{"levelData":` + deep + `}`},
		{name: "one byte over", body: `{"levelData":{"a":"` + strings.Repeat("x", maxLevelData-7) + `"}}`, status: 400, issue: "at most 262144 bytes"},
		{name: "array", body: `{"levelData":[1,2]}`, status: 400, issue: "must be a JSON object or null"},
		{name: "string", body: `{"levelData":"x"}`, status: 400, issue: "must be a JSON object or null"},
		{name: "number", body: `{"levelData":1}`, status: 400, issue: "must be a JSON object or null"},
		{name: "NUL in a value", body: `{"levelData":{"a":["\u0000"]}}`, status: 400, issue: "NUL"},
		{name: "NUL in a key", body: `{"levelData":{"a\u0000":1}}`, status: 400, issue: "NUL"},
		{name: "number out of range", body: `{"levelData":{"a":1e400}}`, status: 400, issue: "number out of range"},
		{name: "65 levels", body: `{"levelData":{"b":` + deep + `}}`, status: 400, issue: "nest"},
		{name: "featured", body: `{"featured":true}`, status: 403},
		{name: "featured with levelData", body: `{"featured":false,"levelData":{}}`, status: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseScenePatch([]byte(tt.body), true)
			if tt.status == 0 {
				require.NoError(t, err)
				return
			}
			e := apperr.From(err)
			require.Equal(t, tt.status, e.Status, "%v", err)
			require.Nil(t, p)
			if tt.issue != "" {
				require.Len(t, e.Issues, 1)
				require.Contains(t, e.Issues[0], tt.issue)
				// The decoder names a NUL or a number out of range by its place inside levelData
				// (levelData.a[0]).
				byPlace := tt.issue == "NUL" || tt.issue == "number out of range"
				require.True(t, strings.HasPrefix(e.Issues[0], "levelData: ") || byPlace && strings.HasPrefix(e.Issues[0], "levelData."), e.Issues[0])
			}
		})
	}
	p, err := parseScenePatch([]byte(`{"levelData":{"post":{"exposure":1}}}`), true)
	require.NoError(t, err)
	require.True(t, p.hasLevelData)
	require.Equal(t, map[string]any{"post": map[string]any{"exposure": 1.0}}, p.levelData)
	p, err = parseScenePatch([]byte(`{"levelData":null}`), true)
	require.NoError(t, err)
	require.True(t, p.hasLevelData)
	require.Nil(t, p.levelData)

	require.Contains(t, patchIssues(t, `{"levelData":{}}`), "levelData: unknown field")
	_, err = parseCommit([]byte(`{"title":"t","splatUrl":"x","levelData":{}}`), false)
	require.Contains(t, apperr.From(err).Issues, "levelData: unknown field")
	r, err := parseCommit([]byte(`{"title":"t","splatUrl":"x","levelData":{"a":true}}`), true)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": true}, r.levelData)
}
