package objectstore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

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
	_, err := api.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(dst),
		CopySource: aws.String(objectkeys.CopySource(bucket, src)), MetadataDirective: s3types.MetadataDirectiveCopy})
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}
