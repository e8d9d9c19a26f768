package scene

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
)

// Upload limits. The spec leaves the single-file maximum open: 2 GiB in one PUT covers most
// uncompressed .ply scenes and stays under S3's 5 GB single-PUT ceiling; larger files (up to
// MaxMultipartFileBytes) go in parts (contract item 14, multipart.go).
const (
	MaxSingleFileBytes = 2 << 30
	MaxLODFileBytes    = 50 << 20
	MaxLODFolderBytes  = 10 << 30
	MinLODFiles        = 2
	MaxLODFiles        = 20_000
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
	// CacheControl is part of every signed upload: assets are immutable under unique keys.
	CacheControl = "public, max-age=31536000, immutable"
	// LODManifest is the file a LOD folder must have at its root.
	LODManifest = "lod-meta.json"
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
	return "i/" + integrationID + "/u/" + ownerID + "/" + kind + "/" + ids.New() + ids.New()[8:] + "/"
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
		ContentType: aws.String(contentType), CacheControl: aws.String(CacheControl), ContentLength: aws.Int64(length)}
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

func (s *Service) saveTicket(ctx context.Context, owner *ent.ExternalUser, kind uploadticket.Kind, prefix string,
	objects []schema.UploadObject, expires time.Time) error {
	if err := s.newTicket(owner, kind, prefix, objects, expires).Exec(ctx); err != nil {
		return apperr.Internal(err)
	}
	return nil
}

// newTicket is the create builder of an upload ticket for objects, which a multipart upload
// extends with its store state.
func (s *Service) newTicket(owner *ent.ExternalUser, kind uploadticket.Kind, prefix string,
	objects []schema.UploadObject, expires time.Time) *ent.UploadTicketCreate {
	var total int64
	for _, o := range objects {
		total += o.Size
	}
	return s.db.Ent.UploadTicket.Create().SetIntegrationID(owner.IntegrationID).SetOwnerID(owner.ID).
		SetKind(kind).SetPrefix(prefix).SetObjects(objects).SetTotalBytes(total).SetExpiresAt(expires)
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
	owner, err := s.uploader(c.UserContext(), caller, eu)
	if err != nil {
		return err
	}
	prefix := ticketPrefix(caller.IntegrationID, owner.ID, keyKind)
	key := prefix + name
	expires := s.now().Add(window)
	uploadURL, err := s.presign(c.UserContext(), key, ctype, size, window)
	if err != nil {
		return signingFailed(err)
	}
	if err := s.saveTicket(c.UserContext(), owner, kind, prefix,
		[]schema.UploadObject{{Key: key, ContentType: ctype, Size: size}}, expires); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "uploadUrl": uploadURL, "fileUrl": s.url(key), "expiresAt": httpx.ISOTime(expires)})
}

// lodUpload is one validated entry of a lod-folder request.
type lodUpload struct {
	RelativePath string `json:"relativePath"`
	ContentType  string `json:"contentType"`
	FileSize     int64  `json:"fileSize"`
}

// lodTypes are the files a streamed-SOG LOD folder holds.
var lodTypes = map[string]string{".json": "application/json", ".webp": "image/webp"}

// relativePathProblem enforces the spec's safe paths: letters, digits, '.', '_', '-', '/',
// relative, no '..' (nor '.' or empty) segments.
func relativePathProblem(p string) string {
	if p == "" || len(p) > maxRelativePath {
		return fmt.Sprintf("must be 1-%d characters", maxRelativePath)
	}
	for i := 0; i < len(p); i++ {
		ch := p[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-' || ch == '/') {
			return "may contain only letters, digits, '.', '_', '-' and '/'"
		}
	}
	if strings.HasPrefix(p, "/") {
		return "must be relative"
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "..":
			return "must not contain '..' segments"
		case ".", "":
			return "must not contain empty or '.' segments"
		}
	}
	return ""
}

// validateLOD applies every rule of the lod-folder request and names each problem (the first
// maxIssues of them: a 20 000-entry request could otherwise produce a 20 000-line answer).
func validateLOD(files []lodUpload) []string {
	var issues []string
	add := func(format string, args ...any) {
		if len(issues) < maxIssues {
			issues = append(issues, fmt.Sprintf(format, args...))
		} else if len(issues) == maxIssues {
			issues = append(issues, "files: further problems omitted")
		}
	}
	if len(files) < MinLODFiles || len(files) > MaxLODFiles {
		add("files: must have %d to %d entries", MinLODFiles, MaxLODFiles)
		return issues
	}
	seen := make(map[string]bool, len(files))
	var total int64
	hasManifest, hasCell := false, false
	for i, f := range files {
		if problem := relativePathProblem(f.RelativePath); problem != "" {
			add("files[%d].relativePath: %s", i, problem)
			continue
		}
		if seen[f.RelativePath] {
			add("files[%d].relativePath: duplicate path %s", i, f.RelativePath)
			continue
		}
		seen[f.RelativePath] = true
		ext := strings.ToLower(path.Ext(f.RelativePath))
		want, ok := lodTypes[ext]
		switch {
		case !ok:
			add("files[%d].relativePath: a LOD folder holds only .json and .webp files", i)
		case f.ContentType != want:
			add("files[%d].contentType: must be %s for %s files", i, want, ext)
		}
		if f.FileSize < 1 || f.FileSize > MaxLODFileBytes {
			add("files[%d].fileSize: must be 1 to %d bytes", i, MaxLODFileBytes)
		}
		total += max(0, f.FileSize)
		hasManifest = hasManifest || f.RelativePath == LODManifest
		hasCell = hasCell || ext == ".webp"
	}
	if !hasManifest {
		add("files: %s is required at the folder root", LODManifest)
	}
	if !hasCell {
		add("files: at least one .webp cell file is required")
	}
	if total > MaxLODFolderBytes {
		add("files: the folder must total at most %d bytes", int64(MaxLODFolderBytes))
	}
	return issues
}

func (s *Service) uploadLODFolder(c *fiber.Ctx) error {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return err
	}
	f, err := httpx.DecodeObject(c.Body(), false)
	if err != nil {
		return err
	}
	f.Only("files")
	raw, _ := f.Raw("files")
	f.Require("files")
	if err := f.Err(); err != nil {
		return err
	}
	files, err := decodeLODFiles(raw)
	if err != nil {
		return err
	}
	if issues := validateLOD(files); len(issues) > 0 {
		return apperr.Invalid("validation failed", issues...)
	}
	owner, err := s.uploader(c.UserContext(), caller, eu)
	if err != nil {
		return err
	}
	prefix := ticketPrefix(caller.IntegrationID, owner.ID, kindLOD)
	expires := s.now().Add(lodWindow)
	uploads := make([]lodSigned, len(files))
	objects := make([]schema.UploadObject, len(files))
	for i, file := range files {
		key := prefix + file.RelativePath
		uploads[i] = lodSigned{RelativePath: file.RelativePath, Key: key}
		objects[i] = schema.UploadObject{Key: key, RelativePath: file.RelativePath, ContentType: file.ContentType, Size: file.FileSize}
	}
	if err := s.presignAll(c.UserContext(), uploads, objects); err != nil {
		return signingFailed(err)
	}
	if err := s.saveTicket(c.UserContext(), owner, uploadticket.KindLodFolder, prefix, objects, expires); err != nil {
		return err
	}
	folderKey := strings.TrimSuffix(prefix, "/")
	return c.JSON(lodResponse{Status: "success", FolderKey: folderKey, ManifestURL: s.url(prefix + LODManifest),
		Uploads: uploads, ExpiresAt: httpx.ISOTime(expires)})
}

// lodSigned is one signed upload of a lod-folder answer.
type lodSigned struct {
	RelativePath string `json:"relativePath"`
	UploadURL    string `json:"uploadUrl"`
	Key          string `json:"key"`
}

// lodResponse is the lod-folder answer; a struct, not a map, because it can hold 20 000 entries.
type lodResponse struct {
	Status      string      `json:"status"`
	FolderKey   string      `json:"folderKey"`
	ManifestURL string      `json:"manifestUrl"`
	Uploads     []lodSigned `json:"uploads"`
	ExpiresAt   string      `json:"expiresAt"`
}

// presignAll signs every upload of a LOD folder. Signing is pure CPU (an HMAC chain per URL), so
// a 20 000-file folder is split across the cores rather than signed one URL after another.
func (s *Service) presignAll(ctx context.Context, uploads []lodSigned, objects []schema.UploadObject) error {
	workers := min(runtime.GOMAXPROCS(0), max(1, len(uploads)/256))
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(uploads); i += workers {
				u, err := s.presign(ctx, uploads[i].Key, objects[i].ContentType, objects[i].Size, lodWindow)
				if err != nil {
					errs[w] = err
					return
				}
				uploads[i].UploadURL = u
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *Service) uploadSplatImages(c *fiber.Ctx) error {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return err
	}
	f, err := httpx.DecodeObject(c.Body(), false)
	if err != nil {
		return err
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
		return err
	}
	owner, err := s.uploader(c.UserContext(), caller, eu)
	if err != nil {
		return err
	}
	prefix := ticketPrefix(caller.IntegrationID, owner.ID, kindImages)
	expires := s.now().Add(imageWindow)
	out := fiber.Map{"status": "success"}
	var objects []schema.UploadObject
	for name, img := range map[string]*schema.UploadObject{"thumbnail": thumb, "depth": depth} {
		if img == nil {
			continue
		}
		ext := thumbnailTypes[img.ContentType]
		img.Key = prefix + name + ext
		u, err := s.presign(c.UserContext(), img.Key, img.ContentType, img.Size, imageWindow)
		if err != nil {
			return signingFailed(err)
		}
		out[name] = fiber.Map{"uploadUrl": u, "fileUrl": s.url(img.Key), "expiresAt": httpx.ISOTime(expires)}
		objects = append(objects, *img)
	}
	if err := s.saveTicket(c.UserContext(), owner, uploadticket.KindSplatImages, prefix, objects, expires); err != nil {
		return err
	}
	return c.JSON(out)
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

// decodeLODFiles parses the files array, reporting type errors by index.
func decodeLODFiles(raw []byte) ([]lodUpload, error) {
	items, err := httpx.DecodeArray(raw)
	if err != nil {
		return nil, apperr.Invalid("validation failed", "files: must be an array of {relativePath, contentType, fileSize}")
	}
	if len(items) > MaxLODFiles {
		return nil, apperr.Invalid("validation failed", fmt.Sprintf("files: must have %d to %d entries", MinLODFiles, MaxLODFiles))
	}
	out := make([]lodUpload, len(items))
	var issues []string
	for i, item := range items {
		sub, err := httpx.DecodeObject(item, false)
		if err != nil {
			issues = append(issues, fmt.Sprintf("files[%d]: must be an object", i))
		} else {
			sub.Only("relativePath", "contentType", "fileSize")
			out[i].RelativePath, _ = sub.String("relativePath", 0, math.MaxInt32)
			out[i].ContentType, _ = sub.String("contentType", 0, 100)
			out[i].FileSize, _ = sub.Int("fileSize", 0, math.MaxInt64)
			if err := sub.Err(); err != nil {
				for _, issue := range apperr.From(err).Issues {
					issues = append(issues, fmt.Sprintf("files[%d].%s", i, issue))
				}
			}
		}
		if len(issues) >= maxIssues {
			break
		}
	}
	if len(issues) > 0 {
		return nil, apperr.Invalid("validation failed", issues...)
	}
	return out, nil
}
