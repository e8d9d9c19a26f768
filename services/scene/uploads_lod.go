package scene

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"runtime"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/uploadrules"
)

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
	if len(files) < uploadrules.MinLODFiles || len(files) > uploadrules.MaxLODFiles {
		add("files: must have %d to %d entries", uploadrules.MinLODFiles, uploadrules.MaxLODFiles)
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
		hasManifest = hasManifest || f.RelativePath == uploadrules.LODManifest
		hasCell = hasCell || ext == ".webp"
	}
	if !hasManifest {
		add("files: %s is required at the folder root", uploadrules.LODManifest)
	}
	if !hasCell {
		add("files: at least one .webp cell file is required")
	}
	if total > MaxLODFolderBytes {
		add("files: the folder must total at most %d bytes", int64(MaxLODFolderBytes))
	}
	return issues
}

// uploadLODFolder answers POST /api/v1/uploads/lod-folder: one ticket and a signed PUT URL per
// file of a validated streamed-SOG folder.
func (s *Service) uploadLODFolder(c *fiber.Ctx) error {
	files, owner, prefix, err := uploadRequest(s, c, kindLOD, parseLODFolder)
	if err != nil {
		return err
	}
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
	out, err := s.saveTicket(c, owner, uploadticket.KindLodFolder, prefix, objects, expires,
		lodResponse{Status: "success", FolderKey: strings.TrimSuffix(prefix, "/"), ManifestURL: s.url(prefix + uploadrules.LODManifest),
			Uploads: uploads, ExpiresAt: httpx.ISOTime(expires)})
	if err != nil {
		return err
	}
	return httpx.SendRecorded(c, out)
}

// parseLODFolder validates a lod-folder body: {files: [...]}, a valid streamed-SOG folder
// (validateLOD).
func parseLODFolder(body []byte) ([]lodUpload, error) {
	f, err := httpx.DecodeObject(body, false)
	if err != nil {
		return nil, err
	}
	f.Only("files")
	raw, _ := f.Raw("files")
	f.Require("files")
	if err := f.Err(); err != nil {
		return nil, err
	}
	files, err := decodeLODFiles(raw)
	if err != nil {
		return nil, err
	}
	if issues := validateLOD(files); len(issues) > 0 {
		return nil, apperr.Invalid("validation failed", issues...)
	}
	return files, nil
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

// decodeLODFiles parses the files array, reporting type errors by index.
func decodeLODFiles(raw []byte) ([]lodUpload, error) {
	items, err := httpx.DecodeArray(raw)
	if err != nil {
		return nil, apperr.Invalid("validation failed", "files: must be an array of {relativePath, contentType, fileSize}")
	}
	if len(items) > uploadrules.MaxLODFiles {
		return nil, apperr.Invalid("validation failed", fmt.Sprintf("files: must have %d to %d entries", uploadrules.MinLODFiles, uploadrules.MaxLODFiles))
	}
	out := make([]lodUpload, len(items))
	err = eachObject(items, "files", "must be an object", func(i int, sub *httpx.Fields) {
		sub.Only("relativePath", "contentType", "fileSize")
		out[i].RelativePath, _ = sub.String("relativePath", 0, math.MaxInt32)
		out[i].ContentType, _ = sub.String("contentType", 0, 100)
		out[i].FileSize, _ = sub.Int("fileSize", 0, math.MaxInt64)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
