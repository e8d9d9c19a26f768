package scene

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/uploadrules"
)

// Resumable (multipart) splat-file uploads, contract item 14. The client names an upload by its
// ticket id, never by the store's multipart id: a ticket is scoped to one integration and
// customer, so another tenant's id is simply not found.
const (
	// MinMultipartFileBytes is S3's smallest part: a smaller file gains nothing from parts.
	MinMultipartFileBytes = 5 << 20
	// MaxMultipartFileBytes bounds a single-file upload in parts.
	MaxMultipartFileBytes = 20 << 30
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
	owner, err := s.uploader(ctx, caller, eu)
	if err != nil {
		return err
	}
	prefix := ticketPrefix(caller.IntegrationID, owner.ID, kindFile)
	key := prefix + name
	// The store's upload is created at the sealed key (seal.go): the commit then copies
	// nothing, and once completed no part URL writes anything.
	stored := objectkeys.Sealed(key)
	// Content-Type and Cache-Control are fixed here, once for the whole object: the parts carry
	// only bytes.
	created, err := s.store.Client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.store.Bucket),
		Key: aws.String(stored), ContentType: aws.String(ctype), CacheControl: aws.String(uploadrules.CacheControl)})
	if err != nil {
		return signingFailed(err)
	}
	uploadID := aws.ToString(created.UploadId)
	expires := s.now().Add(multipartWindow)
	partSize := partSizeFor(size)
	var out *idempotency.Recorded
	err = s.db.InTx(ctx, func(tx *ent.Tx) error {
		t, err := newTicket(tx.UploadTicket, owner, uploadticket.KindSplatFile, prefix,
			[]schema.UploadObject{{Key: key, ContentType: ctype, Size: size}}, expires).
			SetMultipartUploadID(uploadID).SetPartSize(partSize).Save(ctx)
		if err != nil {
			return err
		}
		numbers := make([]int, partCount(size, partSize))
		for i := range numbers {
			numbers[i] = i + 1
		}
		// Signing is local (no store call): the answer is complete inside the transaction.
		parts, err := s.signParts(ctx, t, numbers)
		if err != nil {
			return signingFailed(err)
		}
		out, err = idempotency.Record(ctx, tx, http.StatusOK, fiber.Map{"status": "success", "uploadId": t.ID,
			"fileUrl": s.url(key), "partSize": partSize, "parts": parts, "expiresAt": httpx.ISOTime(expires)})
		return err
	})
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

// multipartTicket loads the caller's multipart ticket named by the :uploadId parameter. Any id
// that is not a multipart upload of this integration and customer is the same 404, so the
// answer never tells whether another tenant's upload exists.
func (s *Service) multipartTicket(c *fiber.Ctx) (*ent.UploadTicket, error) {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return nil, err
	}
	owner, err := s.uploader(c.UserContext(), caller, eu)
	if err != nil {
		return nil, err
	}
	id := c.Params("uploadId")
	notFound := apperr.NotFound("upload not found")
	if id == "" || len(id) > 24 {
		return nil, notFound
	}
	t, err := s.db.Ent.UploadTicket.Query().Where(uploadticket.ID(id), uploadticket.IntegrationID(owner.IntegrationID),
		uploadticket.OwnerID(owner.ID), uploadticket.MultipartUploadIDNotNil()).Only(c.UserContext())
	if ent.IsNotFound(err) {
		return nil, notFound
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if len(t.Objects) != 1 || t.PartSize <= 0 {
		return nil, apperr.Internal(fmt.Errorf("multipart ticket %s is malformed", t.ID))
	}
	return t, nil
}

// openMultipart is multipartTicket for an upload that may still take parts: not completed,
// committed or past its window.
func (s *Service) openMultipart(c *fiber.Ctx) (*ent.UploadTicket, error) {
	t, err := s.multipartTicket(c)
	if err != nil {
		return nil, err
	}
	if t.CommittedAt != nil {
		return nil, apperr.Conflict("this upload is already part of a scene")
	}
	if t.MultipartCompletedAt == nil && s.now().After(t.ExpiresAt) {
		return nil, apperr.Invalid("upload expired", "uploadId: the upload window closed at "+httpx.ISOTime(t.ExpiresAt)+"; start a new upload")
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
	if noSuchUpload(err) {
		return apperr.Conflict("this upload was aborted; start a new upload")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	all := make([]int, partCount(o.Size, t.PartSize))
	for i := range all {
		all[i] = i + 1
	}
	signed, err := s.signParts(c.UserContext(), t, all)
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
	var issues []string
	for i, item := range items {
		sub, err := httpx.DecodeObject(item, false)
		if err != nil {
			issues = append(issues, fmt.Sprintf("parts[%d]: must be an object {partNumber, etag}", i))
		} else {
			sub.Only("partNumber", "etag")
			sub.Require("partNumber", "etag")
			n, okN := sub.Int("partNumber", 1, int64(count))
			etag, okE := sub.String("etag", 1, maxEtag)
			if okN && seen[int(n)] {
				sub.Issuef("partNumber: part %d is named twice", n)
			}
			if err := sub.Err(); err != nil {
				for _, issue := range apperr.From(err).Issues {
					issues = append(issues, fmt.Sprintf("parts[%d].%s", i, issue))
				}
			} else if okN && okE {
				seen[int(n)] = true
				out = append(out, completeRequest{n: int(n), etag: strings.Trim(etag, `"`)})
			}
		}
		if len(issues) >= maxIssues {
			break
		}
	}
	if len(issues) > 0 {
		return nil, apperr.Invalid("validation failed", issues...)
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
	ctx := c.UserContext()
	o := t.Objects[0]
	done := fiber.Map{"status": "success", "uploadId": t.ID, "fileUrl": s.url(o.Key)}
	if t.MultipartCompletedAt != nil {
		return c.JSON(done)
	}
	count := partCount(o.Size, t.PartSize)
	want, err := parseComplete(c.Body(), count)
	if err != nil {
		return err
	}
	stored, err := s.listStoredParts(ctx, t)
	if noSuchUpload(err) {
		return s.completedElsewhere(c, t, done)
	}
	if err != nil {
		return apperr.Internal(err)
	}
	var issues []string
	parts := make([]s3types.CompletedPart, 0, count)
	for _, w := range want {
		p, ok := stored[w.n]
		switch {
		case !ok:
			issues = append(issues, fmt.Sprintf("parts: part %d was not uploaded", w.n))
		case p.Size != partLength(o.Size, t.PartSize, w.n):
			issues = append(issues, fmt.Sprintf("parts: part %d has %d bytes, expected %d", w.n, p.Size, partLength(o.Size, t.PartSize, w.n)))
		case p.Etag != w.etag:
			issues = append(issues, fmt.Sprintf("parts: part %d has another etag than the one stored", w.n))
		}
		parts = append(parts, s3types.CompletedPart{PartNumber: aws.Int32(int32(w.n)), ETag: aws.String(`"` + p.Etag + `"`)})
		if len(issues) >= maxIssues {
			break
		}
	}
	if len(issues) > 0 {
		return apperr.Invalid("upload incomplete", issues...)
	}
	_, err = s.store.Client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(s.store.Bucket),
		Key: aws.String(sealedKey(o)), UploadId: t.MultipartUploadID, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts}})
	if noSuchUpload(err) {
		return s.completedElsewhere(c, t, done)
	}
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "InvalidPart" || api.ErrorCode() == "InvalidPartOrder" || api.ErrorCode() == "EntityTooSmall") {
		// A part replaced between the listing and now: the client lists the parts again.
		return apperr.Invalid("upload incomplete", "parts: the store refused the parts ("+api.ErrorCode()+"); list them again and retry")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	return s.markCompleted(c, t, done)
}

// completedElsewhere settles a complete whose store upload is gone: a concurrent complete made
// the object (success), or the upload was aborted (409).
func (s *Service) completedElsewhere(c *fiber.Ctx, t *ent.UploadTicket, done fiber.Map) error {
	o := t.Objects[0]
	head, err := s.store.Client.HeadObject(c.UserContext(), &s3.HeadObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(sealedKey(o))})
	if err == nil && aws.ToInt64(head.ContentLength) == o.Size {
		return s.markCompleted(c, t, done)
	}
	return apperr.Conflict("this upload was aborted; start a new upload")
}

// markCompleted records that the ticket's object is whole, after checking its size once more:
// the commit charges the declared size, so the object must be exactly that.
func (s *Service) markCompleted(c *fiber.Ctx, t *ent.UploadTicket, done fiber.Map) error {
	ctx := c.UserContext()
	o := t.Objects[0]
	head, err := s.store.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(sealedKey(o))})
	if err != nil {
		return apperr.Internal(err)
	}
	if got := aws.ToInt64(head.ContentLength); got != o.Size {
		return apperr.Internal(fmt.Errorf("multipart upload %s completed with %d bytes, declared %d", t.ID, got, o.Size))
	}
	if err := s.db.Ent.UploadTicket.Update().Where(uploadticket.ID(t.ID), uploadticket.MultipartCompletedAtIsNil()).
		SetMultipartCompletedAt(s.now()).Exec(ctx); err != nil {
		return apperr.Internal(err)
	}
	return c.JSON(done)
}

// abortMultipart answers DELETE …/{uploadId}: the store's upload and any completed object go,
// then the ticket. The ticket row stays locked throughout, so a commit racing the abort either
// wins before it (409 here) or finds the upload gone.
func (s *Service) abortMultipart(c *fiber.Ctx) error {
	t, err := s.multipartTicket(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	tx, err := s.db.Ent.Tx(ctx)
	if err != nil {
		return apperr.Internal(err)
	}
	defer func() { _ = tx.Rollback() }()
	locked, err := tx.UploadTicket.Query().Where(uploadticket.ID(t.ID)).ForUpdate().Only(ctx)
	if ent.IsNotFound(err) {
		return apperr.NotFound("upload not found")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	if locked.CommittedAt != nil {
		return apperr.Conflict("this upload is already part of a scene; delete the scene instead")
	}
	key := sealedKey(locked.Objects[0])
	if err := s.abortStoreUpload(ctx, key, *locked.MultipartUploadID); err != nil {
		return apperr.Internal(err)
	}
	if _, err := s.store.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(key)}); err != nil {
		return apperr.Internal(err)
	}
	if err := tx.UploadTicket.DeleteOneID(t.ID).Exec(ctx); err != nil {
		return apperr.Internal(err)
	}
	if err := tx.Commit(); err != nil {
		return apperr.Internal(err)
	}
	return c.Status(http.StatusOK).JSON(fiber.Map{"status": "success"})
}
