package objectkeys

import (
	"net/url"
	"strings"
)

// AssetRef reads an asset URL in any of the forms a scene may hold: the stored form
// (assetBase/<key>, what uploads answer and records keep; config.AssetBase) or the service's
// asset route (publicBase/assets/<key>, or /assets/s/<token>/<key>, which answers hand out and a
// levelData author may paste; config.PublicBase, may be empty). render builds the URL of another
// key in the same form; a signed URL becomes the stable unsigned one, since its token covers only
// the source's folder. The scene service reads levelData's audio URL with it and clones rewrite
// URLs with it, so a save and a clone agree on which URLs name an object.
func AssetRef(assetBase, publicBase, u string) (key string, render func(string) string, ok bool) {
	if key, ok := strings.CutPrefix(u, assetBase+"/"); ok {
		return key, func(k string) string { return assetBase + "/" + k }, true
	}
	if publicBase == "" {
		return "", nil, false
	}
	rest, ok := strings.CutPrefix(u, publicBase+"/assets/")
	if !ok {
		return "", nil, false
	}
	if signed, ok := strings.CutPrefix(rest, "s/"); ok {
		if _, rest, ok = strings.Cut(signed, "/"); !ok {
			return "", nil, false
		}
	}
	return rest, func(k string) string { return publicBase + "/assets/" + k }, true
}

// CopySource is the x-amz-copy-source value of a CopyObject: bucket/key, URL-encoded segment
// by segment (S3 decodes it; a literal '+' must be encoded, or some stores read it as a space).
func CopySource(bucket, key string) string {
	segs := strings.Split(bucket+"/"+key, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
	}
	return strings.Join(segs, "/")
}
