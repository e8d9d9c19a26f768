package scene

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/internal/uploadrules"
)

// Resumable (multipart) splat-file uploads, contract item 14. The client names an upload by its
// ticket id, never by the store's multipart id: a ticket is scoped to one integration and
// customer, so another tenant's id is simply not found.
const (
	// MinMultipartFileBytes is S3's smallest part: a smaller file gains nothing from parts.
	MinMultipartFileBytes = 5 << 20
	// MaxMultipartFileBytes bounds a single-file upload in parts: the largest file of all.
	MaxMultipartFileBytes = uploadrules.MaxFileBytes
	// MultipartPartBytes is the size of every part but the last. 16 MiB keeps a resumed upload's
	// loss to one part per connection and a 20 GiB file at 1 280 parts (one signed URL each).
	MultipartPartBytes = 16 << 20
	// maxParts is S3's limit on parts per upload.
	maxParts = 10_000
	// multipartWindow is how long the part URLs and the upload stay valid.
	multipartWindow = 24 * time.Hour
	// maxEtag bounds an etag in a complete request; S3's are 32-34 characters (multipart ones a
	// few more).
	maxEtag = 128
)

// partSizeFor is the part size of a file of size bytes: MultipartPartBytes, larger (in whole
// MiB) only if the file would need more than S3's 10 000 parts.
func partSizeFor(size int64) int64 {
	p := int64(MultipartPartBytes)
	if need := (size + maxParts - 1) / maxParts; need > p {
		p = (need + 1<<20 - 1) &^ (1<<20 - 1)
	}
	return p
}

// partCount is the number of parts of a file of size bytes in parts of partSize.
func partCount(size, partSize int64) int { return int((size + partSize - 1) / partSize) }

// partLength is the exact length of part n (from 1): partSize, the last one the remainder.
func partLength(size, partSize int64, n int) int64 { return min(partSize, size-int64(n-1)*partSize) }

// startMultipart answers a splat-file request with multipart: true: the store's multipart
// upload, its ticket, and one signed URL per part.
func (s *Service) startMultipart(c *fiber.Ctx, caller *httpx.Caller, eu, name, ctype string, size int64) error {
	ctx := c.UserContext()
	owner, prefix, err := s.uploadTo(ctx, caller, eu, kindFile)
	if err != nil {
		return err
	}
	key := prefix + name
	session := requestSession(c)
	if err := s.scenes.PrecheckTicket(ctx, owner, session, size); err != nil {
		return err
	}
	// The store's upload is created at the sealed key (seal.go): the commit then copies
	// nothing, and once completed no part URL writes anything.
	stored := objectkeys.Sealed(key)
	uploadID, err := s.createStoreUpload(ctx, stored, ctype)
	if err != nil {
		return signingFailed(err)
	}
	t := scenes.Ticket{Owner: owner, Kind: uploadticket.KindSplatFile, Prefix: prefix, Expires: s.now().Add(multipartWindow),
		Objects: []schema.UploadObject{{Key: key, ContentType: ctype, Size: size}}, MultipartUploadID: uploadID, PartSize: partSizeFor(size),
		Session: session}
	out, err := s.scenes.CreateTicket(ctx, t, func(saved *ent.UploadTicket) (any, error) { return s.multipartAnswer(ctx, saved) })
	if err != nil {
		// Nothing refers to the store's upload unless the commit's outcome is unknown (then the
		// ticket may exist, and the sweep aborts the upload with it once it expires).
		if e := apperr.From(err); e.Status != http.StatusGatewayTimeout {
			s.abortQuietly(stored, uploadID)
		}
		return err
	}
	return httpx.SendRecorded(c, out)
}

// multipartAnswer is the answer to a new multipart upload t: one signed URL per part. Signing is
// local (no store call), so it is complete inside the ticket's transaction.
func (s *Service) multipartAnswer(ctx context.Context, t *ent.UploadTicket) (any, error) {
	o := t.Objects[0]
	parts, err := s.signParts(ctx, t, allParts(o.Size, t.PartSize))
	if err != nil {
		return nil, signingFailed(err)
	}
	return fiber.Map{"status": "success", "uploadId": t.ID, "fileUrl": s.url(o.Key), "partSize": t.PartSize,
		"parts": parts, "expiresAt": httpx.ISOTime(t.ExpiresAt)}, nil
}

// allParts are the part numbers (from 1) of a file of size bytes in parts of partSize.
func allParts(size, partSize int64) []int {
	numbers := make([]int, partCount(size, partSize))
	for i := range numbers {
		numbers[i] = i + 1
	}
	return numbers
}

// multipartTicket loads the caller's multipart ticket named by the :uploadId parameter. Any id
// that is not a multipart upload of this integration and customer is the same 404, so the
// answer never tells whether another tenant's upload exists.
func (s *Service) multipartTicket(c *fiber.Ctx) (*ent.UploadTicket, error) {
	owner, err := s.keyCustomer(c, (*Service).uploader)
	if err != nil {
		return nil, err
	}
	return s.scenes.MultipartTicket(c.UserContext(), owner, c.Params("uploadId"))
}

// openMultipart is multipartTicket for an upload that may still take parts (scenes.OpenForParts):
// not committed, and not past its window unless completed.
func (s *Service) openMultipart(c *fiber.Ctx) (*ent.UploadTicket, error) {
	t, err := s.multipartTicket(c)
	if err != nil {
		return nil, err
	}
	if err := scenes.OpenForParts(t, s.now()); err != nil {
		return nil, err
	}
	return t, nil
}

// getMultipart answers GET /api/v1/uploads/splat-file/{uploadId}: the parts already stored (to
// resume) and fresh signed URLs for the others, so a client that kept only the uploadId (a
// reloaded page) can carry on.
func (s *Service) getMultipart(c *fiber.Ctx) error {
	t, err := s.openMultipart(c)
	if err != nil {
		return err
	}
	o := t.Objects[0]
	out := fiber.Map{"status": "success", "uploadId": t.ID, "fileUrl": s.url(o.Key), "fileSize": o.Size,
		"partSize": t.PartSize, "expiresAt": httpx.ISOTime(t.ExpiresAt)}
	if t.MultipartCompletedAt != nil {
		out["state"], out["parts"], out["missingParts"] = "completed", []storedPart{}, []signedPart{}
		return c.JSON(out)
	}
	stored, err := s.listStoredParts(c.UserContext(), t)
	if objectstore.NoSuchUpload(err) {
		return apperr.Conflict("this upload was aborted; start a new upload")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	signed, err := s.signParts(c.UserContext(), t, allParts(o.Size, t.PartSize))
	if err != nil {
		return signingFailed(err)
	}
	parts, missing := []storedPart{}, []signedPart{}
	for _, sp := range signed {
		if p, ok := stored[sp.PartNumber]; ok && p.Size == partLength(o.Size, t.PartSize, sp.PartNumber) {
			p.UploadURL = sp.UploadURL
			parts = append(parts, p)
		} else {
			missing = append(missing, sp)
		}
	}
	out["state"], out["parts"], out["missingParts"] = "uploading", parts, missing
	return c.JSON(out)
}

// completeRequest is one part of a complete request.
type completeRequest struct {
	n    int
	etag string
}

// parseComplete validates {parts:[{partNumber, etag}]}: every part of the upload exactly once.
func parseComplete(body []byte, count int) ([]completeRequest, error) {
	f, err := httpx.DecodeObject(body, false)
	if err != nil {
		return nil, err
	}
	f.Only("parts")
	f.Require("parts")
	raw, ok := f.Raw("parts")
	if err := f.Err(); err != nil {
		return nil, err
	}
	items, err := httpx.DecodeArray(raw)
	if !ok || err != nil {
		return nil, apperr.Invalid("validation failed", "parts: must be an array of {partNumber, etag}")
	}
	if len(items) != count {
		return nil, apperr.Invalid("validation failed", fmt.Sprintf("parts: this upload has %d parts; name each once", count))
	}
	out := make([]completeRequest, 0, count)
	seen := make(map[int]bool, count)
	err = eachObject(items, "parts", "must be an object {partNumber, etag}", func(_ int, sub *httpx.Fields) {
		sub.Only("partNumber", "etag")
		sub.Require("partNumber", "etag")
		n, okN := sub.Int("partNumber", 1, int64(count))
		etag, okE := sub.String("etag", 1, maxEtag)
		if okN && seen[int(n)] {
			sub.Issuef("partNumber: part %d is named twice", n)
		}
		if sub.Err() == nil && okN && okE {
			seen[int(n)] = true
			out = append(out, completeRequest{n: int(n), etag: strings.Trim(etag, `"`)})
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b completeRequest) int { return a.n - b.n })
	return out, nil
}

// completeMultipart answers POST …/{uploadId}/complete: every part must be in the store with
// its exact size and the etag the client names, so the object is exactly the declared size.
// Completing twice answers the same (a retry whose first answer was lost).
func (s *Service) completeMultipart(c *fiber.Ctx) error {
	t, err := s.openMultipart(c)
	if err != nil {
		return err
	}
	o := t.Objects[0]
	if t.MultipartCompletedAt == nil {
		want, err := parseComplete(c.Body(), partCount(o.Size, t.PartSize))
		if err != nil {
			return err
		}
		if err := s.completeUpload(c.UserContext(), t, want); err != nil {
			return err
		}
	}
	return c.JSON(fiber.Map{"status": "success", "uploadId": t.ID, "fileUrl": s.url(o.Key)})
}

// checkParts checks the parts a complete request names against those in the store: each one
// stored, with its exact length and the etag named. It returns the store's list of the parts
// to complete with, and the problems (at most maxIssues).
func checkParts(want []completeRequest, stored map[int]storedPart, size, partSize int64) ([]s3types.CompletedPart, []string) {
	var issues []string
	parts := make([]s3types.CompletedPart, 0, len(want))
	for _, w := range want {
		p, ok := stored[w.n]
		switch {
		case !ok:
			issues = append(issues, fmt.Sprintf("parts: part %d was not uploaded", w.n))
		case p.Size != partLength(size, partSize, w.n):
			issues = append(issues, fmt.Sprintf("parts: part %d has %d bytes, expected %d", w.n, p.Size, partLength(size, partSize, w.n)))
		case p.Etag != w.etag:
			issues = append(issues, fmt.Sprintf("parts: part %d has another etag than the one stored", w.n))
		}
		parts = append(parts, s3types.CompletedPart{PartNumber: aws.Int32(int32(w.n)), ETag: aws.String(`"` + p.Etag + `"`)})
		if len(issues) >= maxIssues {
			break
		}
	}
	return parts, issues
}

// abortMultipart answers DELETE …/{uploadId}: the store's upload and any completed object go,
// then the ticket, with the ticket row locked throughout (scenes.Store.AbortMultipart).
func (s *Service) abortMultipart(c *fiber.Ctx) error {
	t, err := s.multipartTicket(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := s.scenes.AbortMultipart(ctx, t.ID, func(locked *ent.UploadTicket) error {
		return s.removeStoreUpload(ctx, locked)
	}); err != nil {
		return err
	}
	return c.Status(http.StatusOK).JSON(fiber.Map{"status": "success"})
}
