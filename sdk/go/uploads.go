package splathost

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// CacheControl is the Cache-Control every signed upload PUT must send, exactly: it is part of
// the signature, and the object store refuses any other value.
const CacheControl = "public, max-age=31536000, immutable"

// FileUploadRequest is the body of RequestFileUpload.
type FileUploadRequest struct {
	// FileName ends in .sog, .ksplat, .ply or .splat.
	FileName    string `json:"fileName"`
	ContentType string `json:"contentType"`
	FileSize    int64  `json:"fileSize"`
}

// FileUpload is a signed URL for one scene file: PUT the bytes to UploadURL, then commit with
// SplatURL = FileURL.
type FileUpload struct {
	UploadURL string    `json:"uploadUrl"`
	FileURL   string    `json:"fileUrl"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// FolderFile is one file of a LOD folder upload request.
type FolderFile struct {
	RelativePath string `json:"relativePath"`
	ContentType  string `json:"contentType"`
	FileSize     int64  `json:"fileSize"`
}

// SignedFile is the signed URL of one LOD folder file.
type SignedFile struct {
	RelativePath string `json:"relativePath"`
	UploadURL    string `json:"uploadUrl"`
	Key          string `json:"key"`
}

// FolderUpload is the answer of RequestFolderUpload: a URL per file, valid one hour; commit
// with SplatType lod, SplatURL = ManifestURL and LodFolderKey = FolderKey.
type FolderUpload struct {
	FolderKey   string       `json:"folderKey"`
	ManifestURL string       `json:"manifestUrl"`
	Uploads     []SignedFile `json:"uploads"`
	ExpiresAt   time.Time    `json:"expiresAt"`
}

// ImageSpec is one requested image: its type and exact size.
type ImageSpec struct {
	ContentType string `json:"contentType"`
	FileSize    int64  `json:"fileSize"`
}

// ImageUploadRequest is the body of RequestImageUploads; set at least one image.
type ImageUploadRequest struct {
	// Thumbnail is image/jpeg, image/png or image/webp.
	Thumbnail *ImageSpec `json:"thumbnail,omitempty"`
	// Depth is image/jpeg.
	Depth *ImageSpec `json:"depth,omitempty"`
}

// SignedImage is the signed URL of one image, valid five minutes; FileURL goes to the
// commit's ImageURL or ThumbnailDepthURL.
type SignedImage struct {
	UploadURL string    `json:"uploadUrl"`
	FileURL   string    `json:"fileUrl"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ImageUploads is the answer of RequestImageUploads, one entry per requested image.
type ImageUploads struct {
	Thumbnail *SignedImage `json:"thumbnail"`
	Depth     *SignedImage `json:"depth"`
}

// RequestFileUpload asks for a signed URL for one scene file
// (POST /api/v1/uploads/splat-file). Retried under one Idempotency-Key: a retry gets the same URL.
func (c *Client) RequestFileUpload(ctx context.Context, eu string, r FileUploadRequest) (*FileUpload, error) {
	var out FileUpload
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/uploads/splat-file", eu: eu, body: r, keyed: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RequestFolderUpload asks for signed URLs for every file of a LOD folder
// (POST /api/v1/uploads/lod-folder). Retried under one Idempotency-Key: a retry gets the same URLs.
func (c *Client) RequestFolderUpload(ctx context.Context, eu string, files []FolderFile) (*FolderUpload, error) {
	var out FolderUpload
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/uploads/lod-folder", eu: eu,
		body: map[string]any{"files": files}, keyed: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RequestImageUploads asks for signed URLs for a thumbnail and/or depth image
// (POST /api/v1/uploads/splat-images). Retried under one Idempotency-Key: a retry gets the same URLs.
func (c *Client) RequestImageUploads(ctx context.Context, eu string, r ImageUploadRequest) (*ImageUploads, error) {
	var out ImageUploads
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/uploads/splat-images", eu: eu, body: r, keyed: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutObject sends one object to a signed upload URL with the headers the signature demands
// (Content-Type, Content-Length and [CacheControl]). open is called once per attempt, since a
// retried PUT must send the body again from its start. The PUT is retried like any
// idempotent request.
func (c *Client) PutObject(ctx context.Context, uploadURL, contentType string, size int64, open func() (io.ReadCloser, error)) error {
	return c.putObject(ctx, uploadURL, contentType, size, open, nil)
}

// Progress is where an upload stands.
type Progress struct {
	BytesDone  int64
	BytesTotal int64
	FilesDone  int
	FilesTotal int
}

// UploadOptions tune UploadFile and UploadFolder.
type UploadOptions struct {
	// Title of the scene; the file or folder name when empty.
	Title       string
	Description string
	// Visibility defaults to private.
	Visibility Visibility
	// ContentType of a single file; derived from its extension when empty.
	ContentType string
	// Concurrency bounds the parallel PUTs of a folder (default 8) or of a file's parts
	// (default 4).
	Concurrency int
	// OnProgress, when set, is called after every chunk sent and every file finished, never
	// concurrently. A resumed upload starts with the bytes of the parts already stored.
	OnProgress func(Progress)
	// Multipart uploads the file in parts even at or below [MultipartThreshold] (it must be at
	// least 5 MiB); files above the threshold always go in parts.
	Multipart bool
	// UploadID resumes an interrupted multipart upload of the same file: the parts already
	// stored are not sent again.
	UploadID string
	// OnUploadStarted, when set, receives the multipart upload's id once it is known: keep it to
	// resume with UploadID after a failure.
	OnUploadStarted func(uploadID string)
}

// fileTypes is the content type each scene file extension is declared with.
var fileTypes = map[string]string{
	".sog": "application/sog", ".ksplat": "application/ksplat", ".ply": "application/ply", ".splat": "application/splat",
}

// folderTypes is the content type of each file kind a LOD folder holds.
var folderTypes = map[string]string{".json": "application/json", ".webp": "image/webp"}

// UploadFile uploads the scene file at filePath for the customer eu and commits it as a scene:
// the signed-URL request, the PUT, then the commit. A file above [MultipartThreshold] goes in
// parallel parts instead, resumable with [UploadOptions].UploadID.
func (c *Client) UploadFile(ctx context.Context, eu, filePath string, o UploadOptions) (*CommitResult, error) {
	req, err := fileRequest(filePath, o.ContentType)
	if err != nil {
		return nil, err
	}
	name, ctype := req.FileName, req.ContentType
	var fileURL string
	if req.FileSize > MultipartThreshold || o.Multipart || o.UploadID != "" {
		if fileURL, err = c.uploadParts(ctx, eu, filePath, req, o); err != nil {
			return nil, err
		}
	} else {
		up, err := c.RequestFileUpload(ctx, eu, req)
		if err != nil {
			return nil, err
		}
		tr := newTracker(o.OnProgress, req.FileSize, 1)
		open := func() (io.ReadCloser, error) { return os.Open(filePath) }
		if err := c.putObject(ctx, up.UploadURL, ctype, req.FileSize, open, tr.sent); err != nil {
			return nil, err
		}
		tr.fileDone()
		fileURL = up.FileURL
	}
	return c.CommitSplat(ctx, eu, CommitRequest{Title: titleOr(o.Title, name), Description: o.Description,
		Visibility: o.Visibility, SplatType: SplatTypeFile, SplatURL: fileURL})
}

// fileRequest is the upload request of the regular file at filePath: its name, size and
// content type (ctype, or the one of its extension when empty).
func fileRequest(filePath, ctype string) (FileUploadRequest, error) {
	st, err := os.Stat(filePath)
	if err != nil {
		return FileUploadRequest{}, err
	}
	if !st.Mode().IsRegular() {
		return FileUploadRequest{}, fmt.Errorf("splathost: %s is not a regular file", filePath)
	}
	name := filepath.Base(filePath)
	if ctype == "" {
		if ctype = fileTypes[strings.ToLower(filepath.Ext(name))]; ctype == "" {
			return FileUploadRequest{}, fmt.Errorf("splathost: %s: a scene file ends in .sog, .ksplat, .ply or .splat", name)
		}
	}
	return FileUploadRequest{FileName: name, ContentType: ctype, FileSize: st.Size()}, nil
}

// UploadFolder uploads the LOD folder at dir (lod-meta.json at its root and its .webp cells)
// for the customer eu and commits it as a scene. Files whose names start with a dot are
// skipped (editor and OS droppings); any file that is neither .json nor .webp is an error,
// since the service would refuse it.
func (c *Client) UploadFolder(ctx context.Context, eu, dir string, o UploadOptions) (*CommitResult, error) {
	if o.Title == "" {
		o.Title = filepath.Base(filepath.Clean(dir))
	}
	return c.UploadFS(ctx, eu, os.DirFS(dir), o)
}

// UploadFS is UploadFolder for any file system, such as an embed.FS or a testing/fstest.MapFS.
func (c *Client) UploadFS(ctx context.Context, eu string, fsys fs.FS, o UploadOptions) (*CommitResult, error) {
	files, err := folderFiles(fsys)
	if err != nil {
		return nil, err
	}
	up, err := c.RequestFolderUpload(ctx, eu, files)
	if err != nil {
		return nil, err
	}
	var total int64
	byPath := make(map[string]FolderFile, len(files))
	for _, f := range files {
		total += f.FileSize
		byPath[f.RelativePath] = f
	}
	tr := newTracker(o.OnProgress, total, len(files))
	workers := o.Concurrency
	if workers <= 0 {
		workers = 8
	}
	if err := c.putAll(ctx, fsys, up.Uploads, byPath, workers, tr); err != nil {
		return nil, err
	}
	return c.CommitSplat(ctx, eu, CommitRequest{Title: titleOr(o.Title, "LOD scene"), Description: o.Description,
		Visibility: o.Visibility, SplatType: SplatTypeLOD, SplatURL: up.ManifestURL, LodFolderKey: up.FolderKey})
}

// putAll PUTs every signed file with at most workers in flight; the first failure cancels the
// rest, since the scene cannot be committed without every file.
func (c *Client) putAll(ctx context.Context, fsys fs.FS, uploads []SignedFile, byPath map[string]FolderFile,
	workers int, tr *tracker) error {
	return eachParallel(ctx, workers, uploads, func(ctx context.Context, s SignedFile) error {
		f, ok := byPath[s.RelativePath]
		if !ok {
			return fmt.Errorf("splathost: the service signed %q, which was not requested", s.RelativePath)
		}
		open := func() (io.ReadCloser, error) { return fsys.Open(f.RelativePath) }
		if err := c.putObject(ctx, s.UploadURL, f.ContentType, f.FileSize, open, tr.sent); err != nil {
			return fmt.Errorf("splathost: upload %s: %w", f.RelativePath, err)
		}
		tr.fileDone()
		return nil
	})
}

// folderFiles lists the files of a LOD folder in path order with their types and sizes.
func folderFiles(fsys fs.FS) ([]FolderFile, error) {
	var files []FolderFile
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != "." {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		ctype, ok := folderTypes[strings.ToLower(path.Ext(p))]
		if !ok {
			return fmt.Errorf("splathost: %s: a LOD folder holds only .json and .webp files", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, FolderFile{RelativePath: p, ContentType: ctype, FileSize: info.Size()})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].RelativePath < files[j].RelativePath })
	return files, err
}

func titleOr(title, fallback string) string {
	if title != "" {
		return title
	}
	return fallback
}
