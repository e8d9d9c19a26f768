package objectstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/splathost/splathost/internal/objectkeys"
)

// Copier is the store call a server-side copy needs. *s3.Client implements it.
type Copier interface {
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, opts ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
}

// Copy copies src to dst inside bucket with its metadata (type, cache control). One CopyObject
// suffices: objects written by a single PUT are at most 2 GiB (larger files are multipart
// uploads, which are never copied), under the 5 GiB CopyObject limit. A missing source is the
// store's NoSuchKey, wrapped.
func Copy(ctx context.Context, api Copier, bucket, src, dst string) error {
	return CopyIfMatch(ctx, api, bucket, src, dst, "")
}

// CopyIfMatch is Copy of src only while its ETag is etag (empty: whatever it holds): the copy
// then holds the very bytes a listing described, and a src PUT again since fails with the
// store's PreconditionFailed (IsPreconditionFailed).
func CopyIfMatch(ctx context.Context, api Copier, bucket, src, dst, etag string) error {
	in := &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(dst),
		CopySource: aws.String(objectkeys.CopySource(bucket, src)), MetadataDirective: s3types.MetadataDirectiveCopy}
	if etag != "" {
		in.CopySourceIfMatch = aws.String(etag)
	}
	_, err := api.CopyObject(ctx, in)
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}

// IsPreconditionFailed reports whether err is the store's answer to a condition that did not
// hold (CopyIfMatch's source changed).
func IsPreconditionFailed(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "PreconditionFailed"
}
