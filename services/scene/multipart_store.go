package scene

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/uploadrules"
)

// signedPart is one part's signed upload URL.
type signedPart struct {
	PartNumber int    `json:"partNumber"`
	UploadURL  string `json:"uploadUrl"`
}

// storedPart is one part already in the store. GET answers it with a signed URL too, so a client
// whose own checksum of the part disagrees with the etag can send it again: a store may keep a
// part whose upload was cut off at its full size with other bytes (versitygw 1.8 does), which no
// size check can tell.
type storedPart struct {
	PartNumber int    `json:"partNumber"`
	Etag       string `json:"etag"`
	Size       int64  `json:"size"`
	UploadURL  string `json:"uploadUrl,omitempty"`
}

// presignPart signs one UploadPart with its exact Content-Length (contract item 9): a PUT of
// any other size is refused by the store, so no part can store more than the ticket declares.
func (s *Service) presignPart(ctx context.Context, key, uploadID string, n int, length int64, ttl time.Duration) (string, error) {
	req, err := s.store.Presign.PresignUploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(s.store.Bucket),
		Key: aws.String(key), UploadId: aws.String(uploadID), PartNumber: aws.Int32(int32(n)), ContentLength: aws.Int64(length)},
		s3.WithPresignExpires(ttl))
	if err != nil {
		return "", err
	}
	return req.URL, nil
}

// signParts signs the given part numbers of a ticket's upload, valid until the ticket expires.
func (s *Service) signParts(ctx context.Context, t *ent.UploadTicket, numbers []int) ([]signedPart, error) {
	o := t.Objects[0]
	ttl := t.ExpiresAt.Sub(s.now())
	out := make([]signedPart, 0, len(numbers))
	for _, n := range numbers {
		u, err := s.presignPart(ctx, sealedKey(o), *t.MultipartUploadID, n, partLength(o.Size, t.PartSize, n), ttl)
		if err != nil {
			return nil, err
		}
		out = append(out, signedPart{PartNumber: n, UploadURL: u})
	}
	return out, nil
}

// abortQuietly drops a store upload nothing refers to; a failure leaves parts the store's own
// lifecycle rules must take, and is logged.
func (s *Service) abortQuietly(key, uploadID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.bucket().AbortUpload(ctx, key, uploadID); err != nil {
		s.log.Warn("multipart upload not aborted", "key", key, "err", err)
	}
}

// listStoredParts lists every part the store holds for the ticket's upload, by part number.
func (s *Service) listStoredParts(ctx context.Context, t *ent.UploadTicket) (map[int]storedPart, error) {
	out := map[int]storedPart{}
	in := &s3.ListPartsInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(sealedKey(t.Objects[0])), UploadId: t.MultipartUploadID}
	for {
		page, err := s.store.Client.ListParts(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, p := range page.Parts {
			n := int(aws.ToInt32(p.PartNumber))
			out[n] = storedPart{PartNumber: n, Etag: strings.Trim(aws.ToString(p.ETag), `"`), Size: aws.ToInt64(p.Size)}
		}
		if !aws.ToBool(page.IsTruncated) || page.NextPartNumberMarker == nil || aws.ToString(page.NextPartNumberMarker) == aws.ToString(in.PartNumberMarker) {
			return out, nil
		}
		in.PartNumberMarker = page.NextPartNumberMarker
	}
}

// createStoreUpload creates the store's multipart upload at key and returns its id.
// Content-Type and Cache-Control are fixed here, once for the whole object: the parts carry
// only bytes.
func (s *Service) createStoreUpload(ctx context.Context, key, ctype string) (string, error) {
	created, err := s.store.Client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.store.Bucket),
		Key: aws.String(key), ContentType: aws.String(ctype), CacheControl: aws.String(uploadrules.CacheControl)})
	if err != nil {
		return "", err
	}
	return aws.ToString(created.UploadId), nil
}

// completeUpload completes ticket t's store upload with the parts want names (checkParts), then
// records it complete. A store upload already gone was completed by a concurrent request (or
// aborted: 409).
func (s *Service) completeUpload(ctx context.Context, t *ent.UploadTicket, want []completeRequest) error {
	o := t.Objects[0]
	stored, err := s.listStoredParts(ctx, t)
	if objectstore.NoSuchUpload(err) {
		return s.completedElsewhere(ctx, t)
	}
	if err != nil {
		return apperr.Internal(err)
	}
	parts, issues := checkParts(want, stored, o.Size, t.PartSize)
	if len(issues) > 0 {
		return apperr.Invalid("upload incomplete", issues...)
	}
	_, err = s.store.Client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(s.store.Bucket),
		Key: aws.String(sealedKey(o)), UploadId: t.MultipartUploadID, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts}})
	if objectstore.NoSuchUpload(err) {
		return s.completedElsewhere(ctx, t)
	}
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "InvalidPart" || api.ErrorCode() == "InvalidPartOrder" || api.ErrorCode() == "EntityTooSmall") {
		// A part replaced between the listing and now: the client lists the parts again.
		return apperr.Invalid("upload incomplete", "parts: the store refused the parts ("+api.ErrorCode()+"); list them again and retry")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	return s.markCompleted(ctx, t)
}

// completedElsewhere settles a complete whose store upload is gone: a concurrent complete made
// the object (success), or the upload was aborted (409).
func (s *Service) completedElsewhere(ctx context.Context, t *ent.UploadTicket) error {
	o := t.Objects[0]
	st, found, err := s.bucket().Head(ctx, sealedKey(o))
	if err == nil && found && st.Size == o.Size {
		return s.markCompleted(ctx, t)
	}
	return apperr.Conflict("this upload was aborted; start a new upload")
}

// markCompleted records that the ticket's object is whole, after checking its size once more:
// the commit charges the declared size, so the object must be exactly that.
func (s *Service) markCompleted(ctx context.Context, t *ent.UploadTicket) error {
	o := t.Objects[0]
	st, found, err := s.bucket().Head(ctx, sealedKey(o))
	if err == nil && !found {
		err = fmt.Errorf("multipart upload %s completed, but its object is not in the store", t.ID)
	}
	if err != nil {
		return apperr.Internal(err)
	}
	if st.Size != o.Size {
		return apperr.Internal(fmt.Errorf("multipart upload %s completed with %d bytes, declared %d", t.ID, st.Size, o.Size))
	}
	return s.scenes.MarkCompleted(ctx, t.ID)
}

// removeStoreUpload drops ticket t's store upload and any object it completed into.
func (s *Service) removeStoreUpload(ctx context.Context, t *ent.UploadTicket) error {
	key := sealedKey(t.Objects[0])
	if err := s.bucket().AbortUpload(ctx, key, *t.MultipartUploadID); err != nil {
		return apperr.Internal(err)
	}
	if _, err := s.store.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(key)}); err != nil {
		return apperr.Internal(err)
	}
	return nil
}
