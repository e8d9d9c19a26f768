package scene

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/internal/uploadrules"
)

// Upload limits. The spec leaves the single-file maximum open: 2 GiB in one PUT covers most
// uncompressed .ply scenes and stays under S3's 5 GB single-PUT ceiling; larger files (up to
// MaxMultipartFileBytes) go in parts (contract item 14, multipart.go).
const (
	MaxSingleFileBytes = 2 << 30
	MaxLODFileBytes    = 50 << 20
	MaxLODFolderBytes  = 10 << 30
	MaxImageBytes      = 8 << 20
	MaxImagesBytes     = 16 << 20
	// MaxAudioBytes bounds an audio upload (levelData.audio): 20 MB, about 20 minutes of
	// 128 kbit/s MP3, plenty for a scene's ambience.
	MaxAudioBytes   = 20_000_000
	maxRelativePath = 512
	maxIssues       = 20

	lodWindow   = time.Hour
	fileWindow  = time.Hour
	imageWindow = 5 * time.Minute
	audioWindow = time.Hour
)

// splatTypes maps each allowed extension to the content types it may be declared with.
var splatTypes = map[string][]string{
	".sog":    {"application/sog", "application/octet-stream"},
	".ksplat": {"application/ksplat", "application/octet-stream"},
	".ply":    {"application/ply", "model/ply", "application/octet-stream"},
	".splat":  {"application/splat", "application/octet-stream"},
}

var thumbnailTypes = map[string]string{"image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp"}

// audioTypes maps each audio content type to the extension of its key and the file name
// extensions it may be declared with.
var audioTypes = map[string]struct {
	ext   string
	names []string
}{
	"audio/mpeg": {".mp3", []string{".mp3"}},
	"audio/ogg":  {".ogg", []string{".ogg", ".oga", ".opus"}},
}

// ticketPrefix is where every object of one upload ticket lives. It names the integration and
// the customer (by their record ids, which are safe in a key), so a commit can prove ownership
// from the URL alone, and a random ticket id, so every key is unique.
func ticketPrefix(integrationID, ownerID, kind string) string {
	return objectkeys.Folder(integrationID, ownerID, kind, ids.New()+ids.New()[8:])
}

// uploadTo is where an upload request's ticket goes: the caller's customer when they may upload
// (uploader), and a fresh folder of kind for its objects.
func (s *Service) uploadTo(ctx context.Context, caller *httpx.Caller, eu, kind string) (*ent.ExternalUser, string, error) {
	owner, err := s.uploader(ctx, caller, eu)
	if err != nil {
		return nil, "", err
	}
	return owner, ticketPrefix(caller.IntegrationID, owner.ID, kind), nil
}

// uploadRequest is the prologue of an upload request whose body parse checks (customerBody with
// the uploader rule), with the folder of kind its ticket goes to.
func uploadRequest[T any](s *Service, c *fiber.Ctx, kind string, parse func([]byte) (T, error)) (T, *ent.ExternalUser, string, error) {
	body, call, err := customerBody(s, c, func(b []byte, _ *httpx.Caller) (T, error) { return parse(b) }, (*Service).uploader)
	if err != nil {
		return body, nil, "", err
	}
	return body, call.owner, ticketPrefix(call.caller.IntegrationID, call.owner.ID, kind), nil
}

// Ticket kinds in keys: short, since keys are part of every asset URL.
const (
	kindFile   = "f"
	kindLOD    = "l"
	kindImages = "m"
	kindAudio  = "a"
)

func (s *Service) url(key string) string { return s.assetBase + "/" + key }

// presign signs a PUT whose signature covers Content-Type, Cache-Control and Content-Length
// (contract item 9); the store rejects an upload that differs in any of them. The length is what
// the ticket records and the commit charges: without it in the signature, the URL (valid for its
// whole window, also after the commit) could write any number of bytes over the charged object.
func (s *Service) presign(ctx context.Context, key, contentType string, length int64, ttl time.Duration) (string, error) {
	if length <= 0 {
		return "", fmt.Errorf("presign %s: a positive declared length is required", key)
	}
	in := &s3.PutObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(key),
		ContentType: aws.String(contentType), CacheControl: aws.String(uploadrules.CacheControl), ContentLength: aws.Int64(length)}
	req, err := s.store.Presign.PresignPutObject(ctx, in, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", err
	}
	return req.URL, nil
}

func signingFailed(err error) error {
	e := apperr.New(http.StatusInternalServerError, "signed upload URLs could not be created")
	e.Cause = err
	return e
}

// saveTicket records an upload ticket of objects for the request c and, in the same
// transaction, the answer that hands out their URLs (answer is its JSON; idempotency.Record
// keeps it for a keyed request). Past the bound on open uploads it answers 429.
func (s *Service) saveTicket(c *fiber.Ctx, owner *ent.ExternalUser, kind uploadticket.Kind, prefix string,
	objects []schema.UploadObject, expires time.Time, answer any) (*idempotency.Recorded, error) {
	return s.scenes.CreateTicket(c.UserContext(), scenes.Ticket{Owner: owner, Kind: kind, Prefix: prefix, Objects: objects,
		Expires: expires, Session: requestSession(c)}, func(*ent.UploadTicket) (any, error) { return answer, nil })
}

// requestSession is the embed session behind an upload request, "" for the integration's keys:
// the bound on open uploads gives each editor session a share of its own.
func requestSession(c *fiber.Ctx) string {
	if caller := httpx.CallerOf(c); caller != nil {
		return caller.SessionKey()
	}
	return ""
}

// uploadSplatFile answers POST /api/v1/uploads/splat-file: one signed PUT, or with multipart:
// true a resumable upload in parts (multipart.go), required above MaxSingleFileBytes.
func (s *Service) uploadSplatFile(c *fiber.Ctx) error {
	caller, eu, f, name, err := singleUploadBody(c, "multipart")
	if err != nil {
		return err
	}
	ctype, _ := f.String("contentType", 1, 100)
	multipart, _ := f.Bool("multipart")
	size, okSize := f.Int("fileSize", 1, MaxMultipartFileBytes)
	switch {
	case !okSize:
	case !multipart && size > MaxSingleFileBytes:
		f.Issuef("fileSize: a file above %d bytes must be uploaded in parts (multipart: true)", int64(MaxSingleFileBytes))
	case multipart && size < MinMultipartFileBytes:
		f.Issuef("fileSize: a multipart upload must be at least %d bytes; upload a smaller file in one PUT", int64(MinMultipartFileBytes))
	}
	ext := strings.ToLower(path.Ext(name))
	if name != "" {
		if allowed, ok := splatTypes[ext]; !ok {
			f.Issuef("fileName: extension must be one of .sog, .ksplat, .ply, .splat")
		} else if ctype != "" && !slices.Contains(allowed, ctype) {
			f.Issuef("contentType: a %s file must be one of %s", ext, strings.Join(allowed, ", "))
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	if multipart {
		return s.startMultipart(c, caller, eu, "scene"+ext, ctype, size)
	}
	return s.signSingleUpload(c, caller, eu, uploadticket.KindSplatFile, kindFile, "scene"+ext, ctype, size, fileWindow)
}

// uploadAudio answers POST /api/embed/editor/uploads/audio: a signed PUT for one MP3 or Ogg
// file of at most MaxAudioBytes, signed with its Content-Type and Content-Length like every
// upload. Nothing is charged yet: the bytes count against the customer when a save names the
// file in levelData.audio.url (attach.go), and the orphan sweep removes an audio file no save
// ever named.
func (s *Service) uploadAudio(c *fiber.Ctx) error {
	caller, eu, f, name, err := singleUploadBody(c)
	if err != nil {
		return err
	}
	ctype, okType := f.Enum("contentType", "audio/mpeg", "audio/ogg")
	size, _ := f.Int("fileSize", 1, MaxAudioBytes)
	if ext := strings.ToLower(path.Ext(name)); name != "" && okType && !slices.Contains(audioTypes[ctype].names, ext) {
		f.Issuef("fileName: a %s file must end in %s", ctype, strings.Join(audioTypes[ctype].names, ", "))
	}
	if err := f.Err(); err != nil {
		return err
	}
	return s.signSingleUpload(c, caller, eu, uploadticket.KindAudio, kindAudio, "audio"+audioTypes[ctype].ext, ctype, size, audioWindow)
}

// singleUploadBody is the prologue of the one-file upload routes: the key caller with its EU,
// and the body {fileName, contentType, fileSize}, each required, plus the optional fields a
// route names, and nothing else; the caller reads contentType and fileSize by its own rules.
func singleUploadBody(c *fiber.Ctx, optional ...string) (caller *httpx.Caller, eu string, f *httpx.Fields, name string, err error) {
	if caller, eu, err = httpx.KeyCallerWithEU(c); err != nil {
		return nil, "", nil, "", err
	}
	if f, err = httpx.DecodeObject(c.Body(), false); err != nil {
		return nil, "", nil, "", err
	}
	f.Only(append([]string{"fileName", "contentType", "fileSize"}, optional...)...)
	f.Require("fileName", "contentType", "fileSize")
	name, _ = f.String("fileName", 1, 255)
	return caller, eu, f, name, nil
}

// signSingleUpload records a one-object ticket of the customer (401 for an unknown or inactive
// one) and answers its signed PUT: {status, uploadUrl, fileUrl, expiresAt}.
func (s *Service) signSingleUpload(c *fiber.Ctx, caller *httpx.Caller, eu string, kind uploadticket.Kind, keyKind, name,
	ctype string, size int64, window time.Duration) error {
	owner, prefix, err := s.uploadTo(c.UserContext(), caller, eu, keyKind)
	if err != nil {
		return err
	}
	key := prefix + name
	expires := s.now().Add(window)
	uploadURL, err := s.presign(c.UserContext(), key, ctype, size, window)
	if err != nil {
		return signingFailed(err)
	}
	out, err := s.saveTicket(c, owner, kind, prefix, []schema.UploadObject{{Key: key, ContentType: ctype, Size: size}},
		expires, fiber.Map{"status": "success", "uploadUrl": uploadURL, "fileUrl": s.url(key), "expiresAt": httpx.ISOTime(expires)})
	if err != nil {
		return err
	}
	return httpx.SendRecorded(c, out)
}

// uploadSplatImages answers POST /api/v1/uploads/splat-images: signed PUT URLs for a thumbnail
// and, optionally, its depth image, under one ticket.
func (s *Service) uploadSplatImages(c *fiber.Ctx) error {
	images, owner, prefix, err := uploadRequest(s, c, kindImages, parseImages)
	if err != nil {
		return err
	}
	expires := s.now().Add(imageWindow)
	out, objects, err := s.signImages(c.UserContext(), prefix, images, expires)
	if err != nil {
		return err
	}
	recorded, err := s.saveTicket(c, owner, uploadticket.KindSplatImages, prefix, objects, expires, out)
	if err != nil {
		return err
	}
	return httpx.SendRecorded(c, recorded)
}

// parseImages validates a splat-images body: a thumbnail, a depth image or both, together at
// most MaxImagesBytes. It returns them by name, nil when not requested.
func parseImages(body []byte) (map[string]*schema.UploadObject, error) {
	f, err := httpx.DecodeObject(body, false)
	if err != nil {
		return nil, err
	}
	f.Only("thumbnail", "depth")
	thumb := imageRequest(f, "thumbnail", func(ct string) bool { _, ok := thumbnailTypes[ct]; return ok },
		"must be image/jpeg, image/png or image/webp")
	depth := imageRequest(f, "depth", func(ct string) bool { return ct == "image/jpeg" }, "must be image/jpeg")
	if !f.Has("thumbnail") && !f.Has("depth") || f.IsNull("thumbnail") && f.IsNull("depth") {
		f.Issuef("body: request a thumbnail, a depth image or both")
	}
	if thumb != nil && depth != nil && thumb.Size+depth.Size > MaxImagesBytes {
		f.Issuef("body: both images together must be at most %d bytes", MaxImagesBytes)
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return map[string]*schema.UploadObject{"thumbnail": thumb, "depth": depth}, nil
}

// signImages keys the requested images under prefix and signs their uploads: the answer's
// entry of each, and the ticket's objects.
func (s *Service) signImages(ctx context.Context, prefix string, images map[string]*schema.UploadObject, expires time.Time) (fiber.Map, []schema.UploadObject, error) {
	out := fiber.Map{"status": "success"}
	var objects []schema.UploadObject
	for name, img := range images {
		if img == nil {
			continue
		}
		ext := thumbnailTypes[img.ContentType]
		img.Key = prefix + name + ext
		u, err := s.presign(ctx, img.Key, img.ContentType, img.Size, imageWindow)
		if err != nil {
			return nil, nil, signingFailed(err)
		}
		out[name] = fiber.Map{"uploadUrl": u, "fileUrl": s.url(img.Key), "expiresAt": httpx.ISOTime(expires)}
		objects = append(objects, *img)
	}
	return out, objects, nil
}

// imageRequest validates one {contentType, fileSize} image object; nil when absent or invalid.
func imageRequest(f *httpx.Fields, name string, typeOK func(string) bool, typeProblem string) *schema.UploadObject {
	raw, ok := f.Raw(name)
	if !ok || f.IsNull(name) {
		return nil
	}
	sub, err := httpx.DecodeObject(raw, false)
	if err != nil {
		f.Issuef("%s: must be an object {contentType, fileSize}", name)
		return nil
	}
	sub.Only("contentType", "fileSize")
	ct, okCT := sub.String("contentType", 1, 100)
	size, okSize := sub.Int("fileSize", 1, MaxImageBytes)
	sub.Require("contentType", "fileSize")
	if okCT && !typeOK(ct) {
		sub.Issuef("contentType: %s", typeProblem)
		okCT = false
	}
	if err := sub.Err(); err != nil {
		for _, issue := range apperr.From(err).Issues {
			f.Issuef("%s.%s", name, issue)
		}
		return nil
	}
	if !okCT || !okSize {
		return nil
	}
	return &schema.UploadObject{ContentType: ct, Size: size}
}

// eachObject decodes items, each a JSON object, with parse (i is the item's index). The problems
// come back together as one 400, each under the item (name[i].field: …, or name[i]: notObject
// for an item that is not an object), at most maxIssues of them.
func eachObject(items []json.RawMessage, name, notObject string, parse func(i int, sub *httpx.Fields)) error {
	var issues []string
	for i, item := range items {
		sub, err := httpx.DecodeObject(item, false)
		if err != nil {
			issues = append(issues, fmt.Sprintf("%s[%d]: %s", name, i, notObject))
		} else {
			parse(i, sub)
			if err := sub.Err(); err != nil {
				for _, issue := range apperr.From(err).Issues {
					issues = append(issues, fmt.Sprintf("%s[%d].%s", name, i, issue))
				}
			}
		}
		if len(issues) >= maxIssues {
			break
		}
	}
	if len(issues) > 0 {
		return apperr.Invalid("validation failed", issues...)
	}
	return nil
}
