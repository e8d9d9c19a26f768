package scene

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/integration"
	entscene "github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/config"
)

// The asset route. The bucket is private (contract item 9): every scene asset a client reads
// goes through the service, which decides per request from the scene that owns the object.
//
//	/assets/<key>                  a public, embeddable, live scene's object: stable and
//	                               CDN-cacheable (Cache-Control public, max-age AssetMaxAge)
//	/assets/s/<token>/<key>        any live scene's object, for whoever the API handed the URL
//	                               (a key or session that may see the scene); <token> signs the
//	                               object's folder and an expiry
//
// The token sits in the path, not the query string, so the relative paths of a LOD manifest
// (lod-meta.json names its tiles relative to itself) resolve to signed URLs of the same folder.
// Archived and deleted scenes, scenes of a revoked integration, and anything else answer 404,
// never telling whether the object exists.
const (
	// AssetsPrefix is the path prefix of the asset route on the gateway origin.
	AssetsPrefix = "/assets"
	// AssetMaxAge is the max-age of asset answers, in seconds. With the decision caches below
	// (AssetDecisionTTL) an archive or delete stops every cache within 60 s.
	AssetMaxAge = 30
	// AssetDecisionTTL bounds how long a decision that depends on a row this process is not
	// notified about (the integration's revocation) is reused.
	AssetDecisionTTL = 15 * time.Second
	// AssetURLLifetime is the least time a signed asset URL of an API answer stays valid
	// (contract item 9 asks for 15 minutes); expiries are rounded up to assetURLStep so that
	// answers within one step carry identical, browser-cacheable URLs.
	AssetURLLifetime = 20 * time.Minute
	assetURLStep     = 10 * time.Minute
	// assetOwnerBudget bounds the key-folder -> scene id cache by bytes.
	assetOwnerBudget = 4 << 20
)

// assetCSP keeps any object served from the gateway origin inert: it can never run as a page
// next to the embeds, whatever its declared type.
const assetCSP = "default-src 'none'; sandbox"

// AssetURLs turns the stored asset URLs of a scene (AssetBase + "/" + key: what uploads answer
// and records keep) into URLs of the asset route, signing those of scenes that are not open to
// everyone, and verifies the signatures. The session service renders embed answers with it too.
type AssetURLs struct {
	storage string // config.AssetBase(): the prefix of stored URLs
	public  string // config.PublicBase(): the gateway origin
	key     []byte
	now     func() time.Time
}

// NewAssetURLs returns the asset URL signer of cfg. Its key is derived from the internal
// secret, which every service process already shares with the gateway, so no new secret has
// to be distributed; rotating the internal secret invalidates outstanding asset URLs.
func NewAssetURLs(cfg config.Config) *AssetURLs {
	m := hmac.New(sha256.New, []byte(cfg.InternalSecret))
	m.Write([]byte("splathost asset urls v1"))
	return &AssetURLs{storage: cfg.AssetBase(), public: cfg.PublicBase(), key: m.Sum(nil), now: time.Now}
}

// openToAll reports whether a scene's assets are served to anyone: public, embeddable, live.
func openToAll(sc *ent.Scene) bool {
	return sc.ArchivedAt == nil && sc.Visibility == entscene.VisibilityPublic && sc.AllowEmbed
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
	scope, ok := assetScope(key)
	if !ok {
		return stored
	}
	if openToAll(sc) {
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

// assetScope is the folder an object key belongs to: the first six segments of
// i/<integration>/u/<customer>/<kind>/<ticket>/<rest> (an upload ticket's prefix) or of
// i/<integration>/u/<customer>/clone/<scene id>/<rest> (a clone's folder) or of
// i/<integration>/u/<customer>/rendition/<scene id>/<rest> (a scene's renditions). Each folder belongs
// to one scene, so it is what a signature covers and what the owner lookup starts from. Keys
// with empty, "." or ".." segments have no scope.
func assetScope(key string) (string, bool) {
	parts := strings.Split(key, "/")
	if len(parts) < 7 || parts[0] != "i" || parts[2] != "u" {
		return "", false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return "", false
		}
	}
	return strings.Join(parts[:6], "/") + "/", true
}

// assetRequest is a parsed asset path.
type assetRequest struct {
	key, scope string
	signed     bool
}

// parseAssetPath reads /assets/<key> or /assets/s/<token>/<key>; ok is false for anything else
// and for a signature that does not verify.
func (u *AssetURLs) parseAssetPath(rawPath string) (assetRequest, bool) {
	rest, ok := strings.CutPrefix(rawPath, AssetsPrefix+"/")
	if !ok {
		return assetRequest{}, false
	}
	p, err := url.PathUnescape(rest)
	if err != nil {
		return assetRequest{}, false
	}
	var token string
	signed := strings.HasPrefix(p, "s/")
	if signed {
		token, p, ok = strings.Cut(p[2:], "/")
		if !ok {
			return assetRequest{}, false
		}
	}
	scope, ok := assetScope(p)
	if !ok || (signed && !u.valid(token, scope)) {
		return assetRequest{}, false
	}
	return assetRequest{key: p, scope: scope, signed: signed}, true
}

// assetOwners caches which scene owns a key folder. The mapping never changes once it exists
// (a ticket is committed once, a clone folder is named by its scene), so hits live until the
// byte budget is spent, when the map starts over; misses are never cached.
type assetOwners struct {
	mu    sync.Mutex
	ids   map[string]string
	bytes int
}

func (o *assetOwners) get(scope string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	id, ok := o.ids[scope]
	return id, ok
}

func (o *assetOwners) put(scope, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cost := len(scope) + len(id) + 64
	if o.ids == nil || o.bytes+cost > assetOwnerBudget {
		o.ids, o.bytes = map[string]string{}, 0
	}
	o.ids[scope] = id
	o.bytes += cost
}

// revocations caches whether an integration is revoked for AssetDecisionTTL (integrations are
// few; the map is dropped whole when it grows past its bound).
type revocations struct {
	mu sync.Mutex
	m  map[string]revocation
}

type revocation struct {
	revoked bool
	at      time.Time
}

// assetState holds the asset route's caches.
type assetState struct {
	owners  assetOwners
	revoked revocations
}

// assetOwner returns the id of the scene whose folder scope is, or "" when none is.
func (s *Service) assetOwner(ctx context.Context, scope string) (string, error) {
	if id, ok := s.assets.owners.get(scope); ok {
		return id, nil
	}
	parts := strings.Split(scope, "/")
	var id string
	if parts[4] == "clone" || parts[4] == "rendition" {
		// A clone's folder is named by the job, whose id the new scene gets; a rendition
		// folder by its scene.
		id = parts[5]
	} else {
		t, err := s.db.Ent.UploadTicket.Query().Where(uploadticket.Prefix(scope)).
			Select(uploadticket.FieldSceneID).Only(ctx)
		if ent.IsNotFound(err) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if t.SceneID == nil {
			return "", nil
		}
		id = *t.SceneID
	}
	s.assets.owners.put(scope, id)
	return id, nil
}

// integrationRevoked reports whether the integration is revoked, from a cache of at most
// AssetDecisionTTL.
func (s *Service) integrationRevoked(ctx context.Context, id string) (bool, error) {
	r := &s.assets.revoked
	r.mu.Lock()
	e, ok := r.m[id]
	r.mu.Unlock()
	if ok && s.now().Sub(e.at) < AssetDecisionTTL {
		return e.revoked, nil
	}
	in, err := s.db.Ent.Integration.Query().Where(integration.ID(id)).Select(integration.FieldRevokedAt).Only(ctx)
	revoked := ent.IsNotFound(err) || (err == nil && in.RevokedAt != nil)
	if err != nil && !ent.IsNotFound(err) {
		return false, err
	}
	r.mu.Lock()
	if r.m == nil || len(r.m) > 10_000 {
		r.m = map[string]revocation{}
	}
	r.m[id] = revocation{revoked: revoked, at: s.now()}
	r.mu.Unlock()
	return revoked, nil
}

// errAssetNotFound is every refusal of the asset route: nothing tells a missing object from a
// private, archived or deleted scene's.
func errAssetNotFound() error { return apperr.NotFound("asset not found") }

// mayServe decides whether the request's object is served: its folder's scene exists, is live,
// belongs to the key's integration, which is not revoked; and it is open to everyone or the URL
// is signed. The scene comes from the scene cache, which every writer invalidates by NOTIFY
// (and which reads through while its LISTEN connection is down), so an archive or delete takes
// effect at once; only the revocation is cached, for AssetDecisionTTL.
func (s *Service) mayServe(ctx context.Context, r assetRequest) (public bool, err error) {
	id, err := s.assetOwner(ctx, r.scope)
	if err != nil {
		return false, apperr.Internal(err)
	}
	if id == "" {
		return false, errAssetNotFound()
	}
	sc, err := s.sceneByID(ctx, id)
	if err != nil {
		return false, apperr.Internal(err)
	}
	if sc == nil || sc.ArchivedAt != nil || sc.IntegrationID != strings.Split(r.key, "/")[1] {
		return false, errAssetNotFound()
	}
	revoked, err := s.integrationRevoked(ctx, sc.IntegrationID)
	if err != nil {
		return false, apperr.Internal(err)
	}
	if revoked || (!openToAll(sc) && !r.signed) {
		return false, errAssetNotFound()
	}
	return !r.signed, nil
}

// serveAsset answers GET and HEAD /assets/...: the object streamed from the store (never held
// whole in memory), with Range (206), conditional requests (304), ETag, Last-Modified and the
// stored Content-Type. CORS is the gateway's.
func (s *Service) serveAsset(c *fiber.Ctx) error {
	// Refusals are never cached: a scene published a moment later must load at once.
	c.Set(fiber.HeaderCacheControl, "no-store")
	if s.urls == nil {
		return errAssetNotFound()
	}
	r, ok := s.urls.parseAssetPath(string(c.Request().URI().PathOriginal()))
	if !ok {
		return errAssetNotFound()
	}
	public, err := s.mayServe(c.UserContext(), r)
	if err != nil {
		return err
	}
	h := &c.Response().Header
	if public {
		h.Set(fiber.HeaderCacheControl, "public, max-age="+strconv.Itoa(AssetMaxAge))
	} else {
		h.Set(fiber.HeaderCacheControl, "private, max-age="+strconv.Itoa(AssetMaxAge))
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(fiber.HeaderContentSecurityPolicy, assetCSP)
	h.Set(fiber.HeaderAcceptRanges, "bytes")
	if c.Method() == fiber.MethodHead {
		return s.headAsset(c, r.key)
	}
	return s.getAsset(c, r.key)
}

func (s *Service) headAsset(c *fiber.Ctx, key string) error {
	in := &s3.HeadObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(key)}
	if v := c.Get(fiber.HeaderIfNoneMatch); v != "" {
		in.IfNoneMatch = aws.String(v)
	}
	out, err := s.store.Client.HeadObject(c.UserContext(), in)
	if err != nil {
		return s.assetStoreError(c, err)
	}
	setObjectHeaders(c, out.ContentType, out.ETag, out.LastModified)
	c.Status(http.StatusOK)
	c.Response().SkipBody = true
	c.Response().Header.SetContentLength(int(aws.ToInt64(out.ContentLength)))
	return nil
}

func (s *Service) getAsset(c *fiber.Ctx, key string) error {
	in := &s3.GetObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(key)}
	// If-Range would need the ETag before the request; a full answer is always a correct one.
	if v := c.Get(fiber.HeaderRange); strings.HasPrefix(v, "bytes=") && c.Get(fiber.HeaderIfRange) == "" {
		in.Range = aws.String(v)
	}
	if v := c.Get(fiber.HeaderIfNoneMatch); v != "" {
		in.IfNoneMatch = aws.String(v)
	} else if v := c.Get(fiber.HeaderIfModifiedSince); v != "" {
		if t, err := http.ParseTime(v); err == nil {
			in.IfModifiedSince = aws.Time(t)
		}
	}
	out, err := s.store.Client.GetObject(c.UserContext(), in)
	if err != nil {
		return s.assetStoreError(c, err)
	}
	setObjectHeaders(c, out.ContentType, out.ETag, out.LastModified)
	status := http.StatusOK
	if cr := aws.ToString(out.ContentRange); cr != "" {
		status = http.StatusPartialContent
		c.Set(fiber.HeaderContentRange, cr)
	}
	c.Status(status)
	// The body streams from the store to the client; each read extends the connection's write
	// deadline, so a large file is bounded by idleness, not by the server's whole-answer
	// WriteTimeout.
	c.Response().SetBodyStream(&idleReader{ReadCloser: out.Body, conn: c.Context().Conn(), idle: assetIdle},
		int(aws.ToInt64(out.ContentLength)))
	return nil
}

// assetIdle is how long an asset answer may make no progress before its connection is closed.
const assetIdle = 30 * time.Second

func setObjectHeaders(c *fiber.Ctx, ctype, etag *string, modified *time.Time) {
	ct := aws.ToString(ctype)
	if ct == "" {
		ct = "application/octet-stream"
	}
	c.Set(fiber.HeaderContentType, ct)
	if e := aws.ToString(etag); e != "" {
		c.Set(fiber.HeaderETag, e)
	}
	if modified != nil {
		c.Set(fiber.HeaderLastModified, modified.UTC().Format(http.TimeFormat))
	}
}

// assetStoreError maps the store's answer: a missing object is the route's 404, a conditional
// hit 304, an unsatisfiable range 416; anything else is a 502-free 500 with its cause logged.
func (s *Service) assetStoreError(c *fiber.Ctx, err error) error {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotModified:
			if etag := re.Response.Header.Get("ETag"); etag != "" {
				c.Set(fiber.HeaderETag, etag)
			}
			c.Status(http.StatusNotModified)
			c.Response().SkipBody = true
			return nil
		case http.StatusNotFound:
			return errAssetNotFound()
		case http.StatusRequestedRangeNotSatisfiable:
			return apperr.New(http.StatusRequestedRangeNotSatisfiable, "the requested range is not satisfiable")
		case http.StatusPreconditionFailed:
			return apperr.New(http.StatusPreconditionFailed, "precondition failed")
		}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound") {
		return errAssetNotFound()
	}
	return apperr.Internal(err)
}

// idleReader pushes the write deadline of conn forward before every read, so a stream is cut
// only after idle without progress.
type idleReader struct {
	io.ReadCloser
	conn net.Conn
	idle time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	if r.conn != nil {
		_ = r.conn.SetWriteDeadline(time.Now().Add(r.idle))
	}
	return r.ReadCloser.Read(p)
}

// registerAssets mounts the asset route. It is public: the gateway sends no caller with it.
func (s *Service) registerAssets(r fiber.Router) {
	// The signed shape first: Fiber matches in registration order and /assets/* covers both.
	// The handler parses the raw path itself; the two routes document the two shapes. Fiber's
	// Get registers HEAD too.
	r.Get(AssetsPrefix+"/s/:token/*", s.serveAsset)
	r.Get(AssetsPrefix+"/*", s.serveAsset)
}
