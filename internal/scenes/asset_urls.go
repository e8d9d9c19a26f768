package scenes

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/objectkeys"
)

// AssetURLs turns the stored asset URLs of a scene (AssetBase + "/" + key: what uploads answer
// and records keep) into URLs of the asset route, signing those of scenes that are not open to
// everyone, and verifies the signatures. The scene service renders its answers and checks the
// asset route with it, the session service its embed answers, the worker its webhook payloads.
type AssetURLs struct {
	storage string // config.AssetBase(): the prefix of stored URLs
	public  string // config.PublicBase(): the gateway origin
	// upload is the origin of config.S3Endpoint, where browsers PUT presigned uploads.
	upload string
	key    []byte
	now    func() time.Time
}

// NewAssetURLs returns the asset URL signer of cfg. Its key is derived from the internal
// secret, which every service process already shares with the gateway, so no new secret has
// to be distributed; rotating the internal secret invalidates outstanding asset URLs.
func NewAssetURLs(cfg config.Config) *AssetURLs {
	m := hmac.New(sha256.New, []byte(cfg.InternalSecret))
	m.Write([]byte("splathost asset urls v1"))
	return &AssetURLs{storage: cfg.AssetBase(), public: cfg.PublicBase(), upload: originOf(cfg.S3Endpoint),
		key: m.Sum(nil), now: time.Now}
}

// Origins are the origins an embed page's browser reaches besides its own, for the pages'
// Content-Security-Policy: public serves the asset URLs this signer renders (the gateway's
// public origin, which is the page's own when the page is reached at it) and upload takes the
// presigned upload PUTs (the object store's endpoint). Either is "" when unknown.
func (u *AssetURLs) Origins() (public, upload string) {
	if u == nil {
		return "", ""
	}
	return originOf(u.public), u.upload
}

// PublicBase is the gateway origin the signer's URLs start with ("" without a signer): a URL a
// client sends back in that form names an object too (objectkeys.AssetRef).
func (u *AssetURLs) PublicBase() string {
	if u == nil {
		return ""
	}
	return u.public
}

// originOf is scheme://host[:port] of an absolute http(s) URL, or "".
func originOf(raw string) string {
	p, err := url.Parse(raw)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	return p.Scheme + "://" + p.Host
}

// Of renders one stored URL of sc for an answer. URLs that are not objects of the scene key
// space (an external URL, the empty string) are returned as they are.
func (u *AssetURLs) Of(sc *ent.Scene, stored string) string {
	if u == nil {
		return stored
	}
	key, ok := strings.CutPrefix(stored, u.storage+"/")
	if !ok {
		return stored
	}
	ref, ok := ParseAssetKey(key)
	if !ok {
		return stored
	}
	scope := ref.Folder()
	if OpenToAll(sc) {
		return u.public + AssetsPrefix + "/" + key
	}
	return u.public + AssetsPrefix + "/s/" + u.token(scope, u.expiry()) + "/" + key
}

// OfKey renders the URL of an object key of sc (a key the service wrote itself, such as a
// rendition's), as Of renders a stored URL; without a signer it is the key as stored.
func (u *AssetURLs) OfKey(sc *ent.Scene, key string) string {
	if u == nil {
		return key
	}
	return u.Of(sc, u.storage+"/"+key)
}

// expiry is at least AssetURLLifetime away, on a assetURLStep boundary.
func (u *AssetURLs) expiry() int64 {
	step := int64(assetURLStep / time.Second)
	t := u.now().Add(AssetURLLifetime).Unix()
	return (t + step - 1) / step * step
}

// token is <expiry base 36>.<MAC>; the MAC covers the folder and the expiry.
func (u *AssetURLs) token(scope string, exp int64) string {
	e := strconv.FormatInt(exp, 36)
	return e + "." + base64.RawURLEncoding.EncodeToString(u.mac(scope, e))
}

func (u *AssetURLs) mac(scope, exp string) []byte {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write([]byte(exp))
	return m.Sum(nil)[:18]
}

// valid reports whether token signs scope and has not expired.
func (u *AssetURLs) valid(token, scope string) bool {
	e, sig, ok := strings.Cut(token, ".")
	if !ok || len(e) == 0 || len(e) > 12 || len(sig) != 24 {
		return false
	}
	exp, err := strconv.ParseInt(e, 36, 64)
	if err != nil || u.now().Unix() > exp {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	return err == nil && hmac.Equal(got, u.mac(scope, e))
}

// ParseAssetKey parses an object key the asset route may name: an object (not a folder) of the
// layout, i/<integration>/u/<customer>/<kind>/<folder id>/<rest> (objectkeys.Parse, which
// refuses empty, "." and ".." segments). Its Folder — an upload ticket's, a clone's or a scene's
// renditions — belongs to one scene, so it is what a signature covers and what the owner lookup
// starts from.
func ParseAssetKey(key string) (objectkeys.Key, bool) {
	k, ok := objectkeys.Parse(key)
	return k, ok && !k.IsFolder()
}

// AssetRequest is a parsed asset path.
type AssetRequest struct {
	// Key is the object's key; Scope its Folder, what a signature covers.
	Key, Scope string
	// Ref is Key parsed.
	Ref objectkeys.Key
	// Signed says the path carried a token, which verified.
	Signed bool
}

// ParseAssetPath reads /assets/<key> or /assets/s/<token>/<key>; ok is false for anything else
// and for a signature that does not verify.
func (u *AssetURLs) ParseAssetPath(rawPath string) (AssetRequest, bool) {
	rest, ok := strings.CutPrefix(rawPath, AssetsPrefix+"/")
	if !ok {
		return AssetRequest{}, false
	}
	p, err := url.PathUnescape(rest)
	if err != nil {
		return AssetRequest{}, false
	}
	var token string
	signed := strings.HasPrefix(p, "s/")
	if signed {
		token, p, ok = strings.Cut(p[2:], "/")
		if !ok {
			return AssetRequest{}, false
		}
	}
	ref, ok := ParseAssetKey(p)
	if !ok || (signed && !u.valid(token, ref.Folder())) {
		return AssetRequest{}, false
	}
	return AssetRequest{Key: p, Scope: ref.Folder(), Ref: ref, Signed: signed}, true
}
