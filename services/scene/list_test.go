package scene

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
)

func query(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(name string) (string, bool) { v, ok := m[name]; return v, ok }
}

func TestListParamsDefaults(t *testing.T) {
	p, err := parseListParams(query())
	require.NoError(t, err)
	require.Equal(t, 20, p.limit)
	require.Equal(t, sortCreatedAt, p.sort)
	require.True(t, p.desc)
	require.Nil(t, p.featured)
	require.Nil(t, p.after)

	// Empty values are omitted ones.
	p, err = parseListParams(query("limit", "", "cursor", "", "sort", "", "dir", "", "featured", ""))
	require.NoError(t, err)
	require.Equal(t, 20, p.limit)
	require.Nil(t, p.after)

	p, err = parseListParams(query("limit", "100", "sort", "viewCount", "dir", "asc", "featured", "false", "other", "x"))
	require.NoError(t, err)
	require.Equal(t, 100, p.limit)
	require.Equal(t, sortViewCount, p.sort)
	require.False(t, p.desc)
	require.False(t, *p.featured)

	for _, s := range []string{sortCreatedAt, sortUpdatedAt, sortFeaturedAt, sortViewCount} {
		p, err = parseListParams(query("sort", s, "featured", "true"))
		require.NoError(t, err)
		require.Equal(t, s, p.sort)
		require.True(t, *p.featured)
	}
}

func TestListParamsRejects(t *testing.T) {
	for _, tt := range []struct {
		q     []string
		issue string
	}{
		{[]string{"limit", "0"}, "limit: must be an integer from 1 to 100"},
		{[]string{"limit", "101"}, "limit: must be an integer from 1 to 100"},
		{[]string{"limit", "1.5"}, "limit: must be an integer from 1 to 100"},
		{[]string{"limit", "ten"}, "limit: must be an integer from 1 to 100"},
		{[]string{"limit", "-1"}, "limit: must be an integer from 1 to 100"},
		{[]string{"sort", "title"}, "sort: must be one of"},
		{[]string{"sort", "created_at"}, "sort: must be one of"},
		{[]string{"dir", "up"}, "dir: must be one of 'asc', 'desc'"},
		{[]string{"dir", "DESC"}, "dir: must be one of 'asc', 'desc'"},
		{[]string{"featured", "1"}, "featured: must be 'true' or 'false'"},
		{[]string{"cursor", "!!!"}, "cursor: invalid cursor"},
		{[]string{"cursor", base64.RawURLEncoding.EncodeToString([]byte(`{"s":"createdAt","v":"x","id":"0123456789abcdef01234567"}`))}, "cursor: invalid cursor"},
		{[]string{"cursor", base64.RawURLEncoding.EncodeToString([]byte(`{"s":"createdAt","v":"2026-01-01T00:00:00Z","id":"nope"}`))}, "cursor: invalid cursor"},
		{[]string{"cursor", base64.RawURLEncoding.EncodeToString([]byte(`{"s":"viewCount","v":"7","id":"0123456789abcdef01234567"}`)), "sort", "viewCount"}, "cursor: invalid cursor"},
		{[]string{"cursor", base64.RawURLEncoding.EncodeToString([]byte(`{"s":"viewCount","v":7,"id":"0123456789abcdef01234567"}`))}, "cursor: this cursor belongs to a list sorted by another key"},
		{[]string{"cursor", strings.Repeat("A", 600)}, "cursor: invalid cursor"},
	} {
		_, err := parseListParams(query(tt.q...))
		require.Error(t, err, "%v", tt.q)
		e := apperr.From(err)
		require.Equal(t, http.StatusBadRequest, e.Status)
		require.Len(t, e.Issues, 1, "%v: %v", tt.q, e.Issues)
		require.Contains(t, e.Issues[0], tt.issue, "%v", tt.q)
	}

	// Every problem is named at once.
	_, err := parseListParams(query("limit", "0", "sort", "x", "dir", "y", "featured", "z"))
	require.Len(t, apperr.From(err).Issues, 4)
}

func TestCursorRoundTrip(t *testing.T) {
	at := time.Date(2026, 7, 1, 12, 30, 45, 123456000, time.UTC)
	featured := at.Add(time.Hour)
	sc := &ent.Scene{ID: "0123456789abcdef01234567", CreatedAt: at, UpdatedAt: at.Add(time.Minute), ViewCount: 42, FeaturedAt: &featured}
	for sort, want := range map[string]time.Time{sortCreatedAt: at, sortUpdatedAt: at.Add(time.Minute), sortFeaturedAt: featured} {
		p, err := parseListParams(query("sort", sort, "cursor", encodeCursor(sc, sort)))
		require.NoError(t, err, sort)
		require.Equal(t, sc.ID, p.after.ID)
		require.True(t, want.Equal(p.after.at), "%s: microseconds survive the cursor: %v != %v", sort, want, p.after.at)
	}
	p, err := parseListParams(query("sort", sortViewCount, "cursor", encodeCursor(sc, sortViewCount)))
	require.NoError(t, err)
	require.EqualValues(t, 42, p.after.count)

	// A never-featured scene sorts as the oldest featuredAt.
	sc.FeaturedAt = nil
	p, err = parseListParams(query("sort", sortFeaturedAt, "cursor", encodeCursor(sc, sortFeaturedAt)))
	require.NoError(t, err)
	require.True(t, neverFeatured.Equal(p.after.at))

	// The cursor is URL-safe as is.
	require.NotContains(t, encodeCursor(sc, sortCreatedAt), "=")
	require.NotContains(t, encodeCursor(sc, sortCreatedAt), "+")
	require.NotContains(t, encodeCursor(sc, sortCreatedAt), "/")
}
