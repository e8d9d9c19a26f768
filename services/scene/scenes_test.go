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
	_, err := parseScenePatch([]byte(body))
	require.Error(t, err, body)
	e := apperr.From(err)
	require.Equal(t, http.StatusBadRequest, e.Status, body)
	require.NotEmpty(t, e.Issues, body)
	return e.Issues
}

func TestParseScenePatchFields(t *testing.T) {
	p, err := parseScenePatch([]byte(`{"title":"  Hello  ","description":"","visibility":"public",
		"allowEmbed":false,"allowClone":true,"allowComments":false,"allowReactions":true}`))
	require.NoError(t, err)
	require.Equal(t, "Hello", *p.title)
	require.Equal(t, "", *p.description, `"" clears the description`)
	require.Equal(t, "public", *p.visibility)
	require.False(t, *p.allowEmbed)
	require.True(t, *p.allowClone)
	require.False(t, *p.allowComments)
	require.True(t, *p.allowReactions)
	require.Nil(t, p.featured)

	p, err = parseScenePatch([]byte(`{"description":"x"}`))
	require.NoError(t, err)
	require.Nil(t, p.title, "omitted fields stay untouched")
	require.Nil(t, p.visibility)
	require.Nil(t, p.allowEmbed)

	p, err = parseScenePatch([]byte(`{"featured":true}`))
	require.NoError(t, err)
	require.True(t, *p.featured)
	p, err = parseScenePatch([]byte(`{"featured":false}`))
	require.NoError(t, err)
	require.False(t, *p.featured)

	// 200 characters after trimming, counted in characters, not bytes.
	p, err = parseScenePatch([]byte(`{"title":" ` + strings.Repeat("é", 200) + ` "}`))
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("é", 200), *p.title)
	_, err = parseScenePatch([]byte(`{"description":"` + strings.Repeat("é", 2000) + `"}`))
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
