package scene

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/scenes"
)

// The asset route. The bucket is private (contract item 9): every scene asset a client reads
// goes through the service, which decides per request from the scene that owns the object.
//
//	/assets/<key>                  a public, embeddable, live scene's object: stable and
//	                               CDN-cacheable (Cache-Control public, max-age scenes.AssetMaxAge)
//	/assets/s/<token>/<key>        any live scene's object, for whoever the API handed the URL
//	                               (a key or session that may see the scene); <token> signs the
//	                               object's folder and an expiry
//
// The token sits in the path, not the query string, so the relative paths of a LOD manifest
// (lod-meta.json names its tiles relative to itself) resolve to signed URLs of the same folder.
// Archived and deleted scenes, scenes of a revoked integration, and anything else answer 404,
// never telling whether the object exists.
const (
	// assetOwnerBudget bounds the key-folder -> scene id cache by bytes.
	assetOwnerBudget = 4 << 20
)

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

// assetMisses remembers, for AssetMissTTL, folders that belong to no scene for good: no upload
// ticket has the folder's id, or its scene is gone (scene ids are never reused). Misses are what
// a stranger hammers: without this each one cost a Postgres round trip or two. A folder whose
// ticket is merely not committed yet is never remembered, so a scene committed a moment later
// loads at once.
type assetMisses struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// AssetMissTTL is how long a folder that belongs to no scene answers 404 from memory.
const AssetMissTTL = 10 * time.Second

// assetMissBound bounds the miss cache; past it the map starts over.
const assetMissBound = 100_000

func (m *assetMisses) has(scope string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.m[scope]
	return ok && now.Sub(at) < AssetMissTTL
}

func (m *assetMisses) put(scope string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= assetMissBound {
		m.m = map[string]time.Time{}
	}
	m.m[strings.Clone(scope)] = now
}

// assetState holds the asset route's caches.
type assetState struct {
	owners  assetOwners
	misses  assetMisses
	revoked revocations
}

// assetOwner returns the id of the scene whose folder ref lies in, or "" when none is; settled
// says a "" is for good (no ticket has the folder's id), not an upload still uncommitted.
func (s *Service) assetOwner(ctx context.Context, ref objectkeys.Key) (id string, settled bool, err error) {
	scope := ref.Folder()
	if id, ok := s.assets.owners.get(scope); ok {
		return id, true, nil
	}
	if ref.Kind == objectkeys.KindClone || ref.Kind == objectkeys.KindRendition {
		// A clone's folder is named by the job, whose id the new scene gets; a rendition
		// folder by its scene.
		id = ref.ID
	} else {
		sceneID, found, err := s.scenes.UploadFolder(ctx, scope)
		if err != nil {
			return "", false, err
		}
		if !found {
			return "", true, nil
		}
		if sceneID == nil {
			return "", false, nil
		}
		id = *sceneID
	}
	s.assets.owners.put(scope, id)
	return id, true, nil
}

// integrationRevoked reports whether the integration is revoked, from a cache of at most
// AssetDecisionTTL.
func (s *Service) integrationRevoked(ctx context.Context, id string) (bool, error) {
	r := &s.assets.revoked
	r.mu.Lock()
	e, ok := r.m[id]
	r.mu.Unlock()
	if ok && s.now().Sub(e.at) < scenes.AssetDecisionTTL {
		return e.revoked, nil
	}
	revoked, err := s.scenes.IntegrationRevoked(ctx, id)
	if err != nil {
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
func (s *Service) mayServe(ctx context.Context, r scenes.AssetRequest) (public bool, err error) {
	if s.assets.misses.has(r.Scope, s.now()) {
		return false, errAssetNotFound()
	}
	id, settled, err := s.assetOwner(ctx, r.Ref)
	if err != nil {
		return false, apperr.Internal(err)
	}
	if id == "" {
		if settled {
			s.assets.misses.put(r.Scope, s.now())
		}
		return false, errAssetNotFound()
	}
	sc, err := s.sceneByID(ctx, id)
	if err != nil {
		return false, apperr.Internal(err)
	}
	if sc == nil && r.Ref.Kind != objectkeys.KindClone {
		// Deleted for good. A clone's folder is named before its scene exists, and its URLs
		// are handed out only once it does; still, a clone finishing must load at once.
		s.assets.misses.put(r.Scope, s.now())
	}
	if sc == nil || sc.ArchivedAt != nil || sc.IntegrationID != r.Ref.Integration {
		return false, errAssetNotFound()
	}
	revoked, err := s.integrationRevoked(ctx, sc.IntegrationID)
	if err != nil {
		return false, apperr.Internal(err)
	}
	if revoked || (!scenes.OpenToAll(sc) && !r.Signed) {
		return false, errAssetNotFound()
	}
	return !r.Signed, nil
}

// assetCSP keeps any object served from the gateway origin inert: it can never run as a page
// next to the embeds, whatever its declared type.
const assetCSP = "default-src 'none'; sandbox"

// serveAsset answers GET and HEAD /assets/...: the object streamed from the store (never held
// whole in memory), with Range (206), conditional requests (304), ETag, Last-Modified and the
// stored Content-Type. CORS is the gateway's.
func (s *Service) serveAsset(c *fiber.Ctx) error {
	// Refusals are never cached: a scene published a moment later must load at once.
	c.Set(fiber.HeaderCacheControl, "no-store")
	if s.urls == nil {
		return errAssetNotFound()
	}
	r, ok := s.urls.ParseAssetPath(string(c.Request().URI().PathOriginal()))
	if !ok {
		return errAssetNotFound()
	}
	public, err := s.mayServe(c.UserContext(), r)
	if err != nil {
		return err
	}
	h := &c.Response().Header
	if public {
		h.Set(fiber.HeaderCacheControl, "public, max-age="+strconv.Itoa(scenes.AssetMaxAge))
	} else {
		h.Set(fiber.HeaderCacheControl, "private, max-age="+strconv.Itoa(scenes.AssetMaxAge))
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(fiber.HeaderContentSecurityPolicy, assetCSP)
	h.Set(fiber.HeaderAcceptRanges, "bytes")
	// A committed upload is read from its sealed copy (seal.go): what a later PUT to its
	// upload URL writes is never served.
	key := objectkeys.Sealed(r.Key)
	if c.Method() == fiber.MethodHead {
		return s.headAsset(c, key)
	}
	return s.getAsset(c, key)
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
	r.Get(scenes.AssetsPrefix+"/s/:token/*", s.serveAsset)
	r.Get(scenes.AssetsPrefix+"/*", s.serveAsset)
}
