package scenes

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	entscene "github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/config"
)

func testURLs(now time.Time) *AssetURLs {
	u := NewAssetURLs(config.Config{InternalSecret: "0123456789abcdef0123", S3Endpoint: "http://s3:7070", S3Bucket: "b",
		PublicURL: "https://api.example/"})
	u.now = func() time.Time { return now }
	return u
}

func TestAssetScope(t *testing.T) {
	for key, want := range map[string]string{
		"i/I/u/O/f/T/scene.splat":          "i/I/u/O/f/T/",
		"i/I/u/O/l/T/lod-meta.json":        "i/I/u/O/l/T/",
		"i/I/u/O/l/T/0_0/means_l.webp":     "i/I/u/O/l/T/",
		"i/I/u/O/clone/J/f/T/scene.splat":  "i/I/u/O/clone/J/",
		"i/I/u/O/f/T":                      "",
		"i/I/u/O/f/T/../x.splat":           "",
		"i/I/u/O/f//x.splat":               "",
		"x/I/u/O/f/T/scene.splat":          "",
		"i/I/u/O/l/T/0_0/./means_l.webp":   "",
		"i/I/u/O/l/T/0_0/means_l.webp/":    "",
		"i/I/v/O/clone/J/f/T/scene.splat":  "",
		"../../i/I/u/O/f/T/scene.splat/..": "",
	} {
		got, ok := ParseAssetKey(key)
		require.Equal(t, want != "", ok, key)
		if ok {
			require.Equal(t, want, got.Folder(), key)
		}
	}
}

// TestAssetURLsSignAndVerify: open scenes get the stable URL, others a token that verifies for
// the folder only, until its expiry, which is at least AssetURLLifetime away.
func TestAssetURLsSignAndVerify(t *testing.T) {
	now := time.Unix(1_790_000_123, 0)
	u := testURLs(now)
	sc := &ent.Scene{Visibility: entscene.VisibilityPublic, AllowEmbed: true}
	stored := "http://s3:7070/b/i/I/u/O/l/T/lod-meta.json"
	require.Equal(t, "https://api.example/assets/i/I/u/O/l/T/lod-meta.json", u.Of(sc, stored))
	require.Equal(t, "https://elsewhere/x.splat", u.Of(sc, "https://elsewhere/x.splat"))
	require.Equal(t, "", u.Of(sc, ""))

	for _, closed := range []*ent.Scene{
		{Visibility: entscene.VisibilityPrivate, AllowEmbed: true},
		{Visibility: entscene.VisibilityPublic, AllowEmbed: false},
		{Visibility: entscene.VisibilityPublic, AllowEmbed: true, ArchivedAt: &now},
	} {
		signed := u.Of(closed, stored)
		rest, ok := strings.CutPrefix(signed, "https://api.example/assets/s/")
		require.True(t, ok, signed)
		tok, key, _ := strings.Cut(rest, "/")
		require.Equal(t, "i/I/u/O/l/T/lod-meta.json", key)

		r, ok := u.ParseAssetPath("/assets/s/" + tok + "/i/I/u/O/l/T/0_0/means_l.webp")
		require.True(t, ok, "a tile beside the manifest is covered")
		require.True(t, r.Signed)
		_, ok = u.ParseAssetPath("/assets/s/" + tok + "/i/I/u/O/l/T2/lod-meta.json")
		require.False(t, ok, "another folder is not")
		forged := tok[:len(tok)-1] + "A"
		if strings.HasSuffix(tok, "A") {
			forged = tok[:len(tok)-1] + "B"
		}
		_, ok = u.ParseAssetPath("/assets/s/" + forged + "/" + key)
		require.False(t, ok, "a forged signature is not")

		later := testURLs(now.Add(AssetURLLifetime - time.Second))
		_, ok = later.ParseAssetPath("/assets/s/" + tok + "/" + key)
		require.True(t, ok, "valid for the whole lifetime")
		expired := testURLs(now.Add(AssetURLLifetime + assetURLStep + time.Second))
		_, ok = expired.ParseAssetPath("/assets/s/" + tok + "/" + key)
		require.False(t, ok, "expired")
		other := NewAssetURLs(config.Config{InternalSecret: "another-secret-0123456789", PublicURL: "https://api.example"})
		other.now = u.now
		_, ok = other.ParseAssetPath("/assets/s/" + tok + "/" + key)
		require.False(t, ok, "another deployment's key")
	}
	r, ok := u.ParseAssetPath("/assets/i/I/u/O/f/T/scene.splat")
	require.True(t, ok)
	require.False(t, r.Signed)
	for _, bad := range []string{"/assets/", "/assets/s/", "/assets/s/x.y/i/I/u/O/f/T/a", "/assets/i/I/u/O/f/T/%2e%2e/a", "/other/i/I/u/O/f/T/a"} {
		_, ok := u.ParseAssetPath(bad)
		require.False(t, ok, bad)
	}
}
