package splathost

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// MultipartThreshold is the file size above which [Client.UploadFile] uploads in parts: a
// dropped connection then costs one part, not the whole file, and an interrupted upload can be
// resumed ([UploadOptions].UploadID). The service requires parts above 2 GiB and allows them
// from 5 MiB.
const MultipartThreshold = 100 << 20

// defaultPartConcurrency is how many parts go up at once when UploadOptions.Concurrency is unset.
const defaultPartConcurrency = 4

// SignedPart is the signed URL of one part of a multipart upload. The URL is signed with the
// part's exact size: every part is PartSize bytes but the last, which holds the rest.
type SignedPart struct {
	PartNumber int    `json:"partNumber"`
	UploadURL  string `json:"uploadUrl"`
}

// MultipartUpload is the answer of [Client.StartMultipartUpload]: one URL per part, valid 24 h.
// PUT every part, then [Client.CompleteMultipartUpload], then commit with SplatURL = FileURL.
type MultipartUpload struct {
	UploadID  string       `json:"uploadId"`
	FileURL   string       `json:"fileUrl"`
	PartSize  int64        `json:"partSize"`
	Parts     []SignedPart `json:"parts"`
	ExpiresAt time.Time    `json:"expiresAt"`
}

// StoredPart is a part the object store already holds, with a signed URL to send it again.
type StoredPart struct {
	PartNumber int    `json:"partNumber"`
	ETag       string `json:"etag"`
	Size       int64  `json:"size"`
	UploadURL  string `json:"uploadUrl"`
}

// MultipartStatus is the answer of [Client.GetMultipartUpload]: the parts already stored and
// fresh signed URLs for the missing ones, which is all a resumed upload needs.
type MultipartStatus struct {
	UploadID string `json:"uploadId"`
	// State is "uploading", or "completed" once [Client.CompleteMultipartUpload] succeeded.
	State        string       `json:"state"`
	FileURL      string       `json:"fileUrl"`
	FileSize     int64        `json:"fileSize"`
	PartSize     int64        `json:"partSize"`
	Parts        []StoredPart `json:"parts"`
	MissingParts []SignedPart `json:"missingParts"`
	ExpiresAt    time.Time    `json:"expiresAt"`
}

// CompletedPart names one uploaded part by its number and the ETag its PUT answered.
type CompletedPart struct {
	PartNumber int    `json:"partNumber"`
	ETag       string `json:"etag"`
}

// multipartPath is the resource of one multipart upload.
func multipartPath(uploadID string) string {
	return "/api/v1/uploads/splat-file/" + url.PathEscape(uploadID)
}

// StartMultipartUpload asks for a resumable upload of one scene file in parts
// (POST /api/v1/uploads/splat-file with multipart: true). Retried under one Idempotency-Key, so
// a retry whose first answer was lost gets the same upload, not a second one.
func (c *Client) StartMultipartUpload(ctx context.Context, eu string, r FileUploadRequest) (*MultipartUpload, error) {
	var out MultipartUpload
	body := struct {
		FileUploadRequest
		Multipart bool `json:"multipart"`
	}{r, true}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/uploads/splat-file", eu: eu, body: body, keyed: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetMultipartUpload returns the parts of a multipart upload already stored and signed URLs for
// the rest (GET /api/v1/uploads/splat-file/{uploadId}).
func (c *Client) GetMultipartUpload(ctx context.Context, eu, uploadID string) (*MultipartStatus, error) {
	var out MultipartStatus
	if _, err := c.do(ctx, call{method: http.MethodGet, path: multipartPath(uploadID), eu: eu}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CompleteMultipartUpload joins the uploaded parts into the file and returns its fileUrl
// (POST …/{uploadId}/complete). Every part must be named once with its ETag. Retried on
// failure: completing an upload twice answers the same.
func (c *Client) CompleteMultipartUpload(ctx context.Context, eu, uploadID string, parts []CompletedPart) (string, error) {
	var out struct {
		FileURL string `json:"fileUrl"`
	}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: multipartPath(uploadID) + "/complete", eu: eu,
		body: map[string]any{"parts": parts}, safe: true}, &out); err != nil {
		return "", err
	}
	return out.FileURL, nil
}

// AbortMultipartUpload abandons a multipart upload and drops its stored parts
// (DELETE /api/v1/uploads/splat-file/{uploadId}).
func (c *Client) AbortMultipartUpload(ctx context.Context, eu, uploadID string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: multipartPath(uploadID), eu: eu}, nil)
	return err
}

// PutPart sends one part to its signed URL and returns the ETag the store answered, which
// [Client.CompleteMultipartUpload] needs. size must be the part's exact length (the signature
// covers it); open is called once per attempt.
func (c *Client) PutPart(ctx context.Context, uploadURL string, size int64, open func() (io.ReadCloser, error)) (string, error) {
	h, err := c.put(ctx, uploadURL, size, nil, open, nil)
	if err != nil {
		return "", err
	}
	return strings.Trim(h.Get("ETag"), `"`), nil
}

// UploadParts uploads the scene file at filePath for the customer eu in parallel, resumable
// parts and completes it, without committing: it returns the fileUrl for [Client.CommitSplat]
// (to commit with images, say). [Client.UploadFile] does this and the commit for large files.
// o's Concurrency, OnProgress, UploadID and OnUploadStarted apply; ContentType is derived from
// the extension when empty.
func (c *Client) UploadParts(ctx context.Context, eu, filePath string, o UploadOptions) (string, error) {
	req, err := fileRequest(filePath, o.ContentType)
	if err != nil {
		return "", err
	}
	return c.uploadParts(ctx, eu, filePath, req, o)
}

// partLength is the exact length of part n (from 1) of a file of size bytes.
func partLength(size, partSize int64, n int) int64 { return min(partSize, size-int64(n-1)*partSize) }

// uploadParts sends the file at filePath in parts, resuming o.UploadID when set, completes the
// upload and returns its fileUrl.
func (c *Client) uploadParts(ctx context.Context, eu, filePath string, req FileUploadRequest, o UploadOptions) (string, error) {
	var (
		uploadID, fileURL string
		partSize          int64
		todo              []SignedPart
		done              []CompletedPart
	)
	if o.UploadID == "" {
		up, err := c.StartMultipartUpload(ctx, eu, req)
		if err != nil {
			return "", err
		}
		uploadID, fileURL, partSize, todo = up.UploadID, up.FileURL, up.PartSize, up.Parts
	} else {
		st, err := c.GetMultipartUpload(ctx, eu, o.UploadID)
		if err != nil {
			return "", err
		}
		if st.FileSize != req.FileSize {
			return "", fmt.Errorf("splathost: upload %s is of a %d-byte file, not this %d-byte one", o.UploadID, st.FileSize, req.FileSize)
		}
		uploadID, fileURL, partSize, todo = st.UploadID, st.FileURL, st.PartSize, st.MissingParts
		if st.State == "completed" {
			if o.OnUploadStarted != nil {
				o.OnUploadStarted(uploadID)
			}
			return fileURL, nil
		}
		// A stored part counts only if its ETag is the MD5 of the file's bytes there: a store may
		// keep a part whose upload was cut off at full size with other bytes (versitygw does),
		// and the complete would join them. A part that disagrees is sent again.
		for _, p := range st.Parts {
			intact, err := partIntact(filePath, int64(p.PartNumber-1)*partSize, p.Size, p.ETag)
			if err != nil {
				return "", err
			}
			if intact {
				done = append(done, CompletedPart{PartNumber: p.PartNumber, ETag: p.ETag})
			} else {
				todo = append(todo, SignedPart{PartNumber: p.PartNumber, UploadURL: p.UploadURL})
			}
		}
	}
	if partSize <= 0 {
		return "", fmt.Errorf("splathost: the service answered part size %d", partSize)
	}
	if o.OnUploadStarted != nil {
		o.OnUploadStarted(uploadID)
	}
	var stored int64
	for _, p := range done {
		stored += partLength(req.FileSize, partSize, p.PartNumber)
	}
	tr := newTrackerAt(o.OnProgress, req.FileSize, 1, stored)
	workers := o.Concurrency
	if workers <= 0 {
		workers = defaultPartConcurrency
	}
	sent, err := c.putParts(ctx, filePath, req.FileSize, partSize, todo, workers, tr)
	if err != nil {
		return "", fmt.Errorf("splathost: upload %s interrupted (resume with UploadOptions.UploadID): %w", uploadID, err)
	}
	done = append(done, sent...)
	sort.Slice(done, func(i, j int) bool { return done[i].PartNumber < done[j].PartNumber })
	fileURL2, err := c.CompleteMultipartUpload(ctx, eu, uploadID, done)
	if err != nil {
		return "", err
	}
	tr.fileDone()
	if fileURL2 != "" {
		fileURL = fileURL2
	}
	return fileURL, nil
}

// putParts PUTs the given parts of the file with at most workers in flight and returns their
// ETags; the first failure cancels the rest. Parts finished before a failure stay stored, and a
// resumed upload skips them.
func (c *Client) putParts(ctx context.Context, filePath string, size, partSize int64, parts []SignedPart,
	workers int, tr *tracker) ([]CompletedPart, error) {
	var mu sync.Mutex
	var out []CompletedPart
	err := eachParallel(ctx, workers, parts, func(ctx context.Context, p SignedPart) error {
		if p.PartNumber < 1 || int64(p.PartNumber-1)*partSize >= size {
			return fmt.Errorf("splathost: the service signed part %d, which this file does not have", p.PartNumber)
		}
		off, n := int64(p.PartNumber-1)*partSize, partLength(size, partSize, p.PartNumber)
		open := func() (io.ReadCloser, error) {
			f, err := os.Open(filePath)
			if err != nil {
				return nil, err
			}
			return sectionCloser{io.NewSectionReader(f, off, n), f}, nil
		}
		h, err := c.put(ctx, p.UploadURL, n, nil, open, tr.sent)
		if err != nil {
			return fmt.Errorf("part %d: %w", p.PartNumber, err)
		}
		mu.Lock()
		out = append(out, CompletedPart{PartNumber: p.PartNumber, ETag: strings.Trim(h.Get("ETag"), `"`)})
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// partIntact reports whether etag is the MD5 of the n bytes of the file at off, the ETag S3
// gives a part stored as sent.
func partIntact(filePath string, off, n int64, etag string) (bool, error) {
	f, err := os.Open(filePath)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, off, n)); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == strings.Trim(etag, `"`), nil
}

// sectionCloser reads one section of a file and closes the file.
type sectionCloser struct {
	*io.SectionReader
	f *os.File
}

// Close closes the underlying file.
func (s sectionCloser) Close() error { return s.f.Close() }
