package scene

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/splathost/splathost/ent"
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
	if err := s.abortStoreUpload(ctx, key, uploadID); err != nil {
		s.log.Warn("multipart upload not aborted", "key", key, "err", err)
	}
}

// abortStoreUpload aborts the store's multipart upload; one already gone (completed or aborted)
// is success.
func (s *Service) abortStoreUpload(ctx context.Context, key, uploadID string) error {
	_, err := s.store.Client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(s.store.Bucket),
		Key: aws.String(key), UploadId: aws.String(uploadID)})
	if noSuchUpload(err) {
		return nil
	}
	return err
}

// noSuchUpload reports the store's answer for a multipart upload that no longer exists.
func noSuchUpload(err error) bool {
	var nsu *s3types.NoSuchUpload
	var api smithy.APIError
	return errors.As(err, &nsu) || errors.As(err, &api) && api.ErrorCode() == "NoSuchUpload"
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
