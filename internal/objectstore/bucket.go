package objectstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// API is the part of the S3 API the workers use. *s3.Client implements it; tests substitute an
// in-memory bucket (activities/activitiestest) to drive failures and resumption.
type API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, opts ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error)
}

// ErrStopListing, returned by a page callback, ends a listing without an error.
var ErrStopListing = errors.New("stop listing")

// Batch is the S3 DeleteObjects maximum, and the ListObjectsV2 page size.
const Batch = 1000

// Bucket is one bucket through API: the store operations every worker shares (list a folder
// a page at a time, delete keys in batches, empty a folder), written once.
type Bucket struct {
	API  API
	Name string
}

// Stat is what a HEAD tells of one object.
type Stat struct {
	Size        int64
	ContentType string
}

// Head returns key's Stat; found is false, with a nil error, when there is no such object (a
// missing object is an answer for every caller, not a failure).
func (b Bucket) Head(ctx context.Context, key string) (st Stat, found bool, err error) {
	out, err := b.API.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	var nf *s3types.NotFound
	if errors.As(err, &nf) {
		return Stat{}, false, nil
	}
	if err != nil {
		return Stat{}, false, err
	}
	return Stat{Size: aws.ToInt64(out.ContentLength), ContentType: aws.ToString(out.ContentType)}, true, nil
}

// AbortUpload aborts the multipart upload uploadID of key with the parts it holds; an upload
// already gone (completed or aborted) is success, so a retry or a second party may run it too.
func (b Bucket) AbortUpload(ctx context.Context, key, uploadID string) error {
	_, err := b.API.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(b.Name),
		Key: aws.String(key), UploadId: aws.String(uploadID)})
	if NoSuchUpload(err) {
		return nil
	}
	return err
}

// LastPart returns when the newest part of the multipart upload uploadID of key was stored
// (zero when it holds none yet); found is false, with a nil error, when the upload is gone
// (completed or aborted). The store's own times are the evidence that parts keep arriving: no
// request of the service sees a part PUT.
func (b Bucket) LastPart(ctx context.Context, key, uploadID string) (last time.Time, found bool, err error) {
	in := &s3.ListPartsInput{Bucket: aws.String(b.Name), Key: aws.String(key), UploadId: aws.String(uploadID)}
	for {
		page, err := b.API.ListParts(ctx, in)
		if NoSuchUpload(err) {
			return time.Time{}, false, nil
		}
		if err != nil {
			return time.Time{}, false, err
		}
		for _, p := range page.Parts {
			if p.LastModified != nil && p.LastModified.After(last) {
				last = *p.LastModified
			}
		}
		if !aws.ToBool(page.IsTruncated) || page.NextPartNumberMarker == nil ||
			aws.ToString(page.NextPartNumberMarker) == aws.ToString(in.PartNumberMarker) {
			return last, true, nil
		}
		in.PartNumberMarker = page.NextPartNumberMarker
	}
}

// NoSuchUpload reports the store's answer for a multipart upload that no longer exists (a typed
// error from S3, an error code from stores the SDK does not model).
func NoSuchUpload(err error) bool {
	var nsu *s3types.NoSuchUpload
	var api smithy.APIError
	return errors.As(err, &nsu) || errors.As(err, &api) && api.ErrorCode() == "NoSuchUpload"
}

// ListFolder lists prefix a page at a time (1000 keys, the S3 maximum), in key order. It lists
// after the last key seen rather than with a continuation token, which stays valid however the
// store treats deletions under a running listing (EmptyPrefix deletes each page it is given).
func (b Bucket) ListFolder(ctx context.Context, prefix string, page func([]s3types.Object) error) error {
	return b.ListFolderAfter(ctx, prefix, "", page)
}

// ListFolderAfter is ListFolder from the first key after start (all of prefix when empty): a
// listing that stops (its page callback returns ErrStopListing) resumes from its last key.
func (b Bucket) ListFolderAfter(ctx context.Context, prefix, start string, page func([]s3types.Object) error) error {
	var after *string
	if start != "" {
		after = aws.String(start)
	}
	for {
		out, err := b.API.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name),
			Prefix: aws.String(prefix), StartAfter: after, MaxKeys: aws.Int32(Batch)})
		if err != nil {
			return fmt.Errorf("listing %s: %w", prefix, err)
		}
		if len(out.Contents) == 0 {
			return nil
		}
		if err := page(out.Contents); errors.Is(err, ErrStopListing) {
			return nil
		} else if err != nil {
			return err
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		after = out.Contents[len(out.Contents)-1].Key
	}
}

// EmptyPrefix lists prefix a page at a time and deletes each page before reading the next, so
// a 20 000-tile LOD folder never sits in memory. done reports each deleted page.
func (b Bucket) EmptyPrefix(ctx context.Context, prefix string, done func(n int)) error {
	return b.ListFolder(ctx, prefix, func(page []s3types.Object) error {
		keys := make([]string, 0, len(page))
		for _, o := range page {
			keys = append(keys, aws.ToString(o.Key))
		}
		return b.DeleteKeys(ctx, keys, done)
	})
}

// DeleteKeys removes keys in requests of up to 1000 objects, reporting each deleted batch to
// done (nil: no reports). An object that is already gone is success; any other per-key error
// fails the batch, naming the first.
func (b Bucket) DeleteKeys(ctx context.Context, keys []string, done func(n int)) error {
	for i := 0; i < len(keys); i += Batch {
		batch := keys[i:min(i+Batch, len(keys))]
		if err := b.deleteBatch(ctx, batch); err != nil {
			return err
		}
		if done != nil {
			done(len(batch))
		}
	}
	return nil
}

// deleteBatch removes up to 1000 objects in one request.
func (b Bucket) deleteBatch(ctx context.Context, keys []string) error {
	ids := make([]s3types.ObjectIdentifier, len(keys))
	for i, k := range keys {
		ids[i] = s3types.ObjectIdentifier{Key: aws.String(k)}
	}
	out, err := b.API.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b.Name),
		Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
	if err != nil {
		return fmt.Errorf("deleting %d objects: %w", len(keys), err)
	}
	failed := 0
	var first string
	for _, e := range out.Errors {
		if aws.ToString(e.Code) == "NoSuchKey" {
			continue
		}
		if failed == 0 {
			first = aws.ToString(e.Key) + ": " + aws.ToString(e.Code) + " " + aws.ToString(e.Message)
		}
		failed++
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d objects not deleted, first %s", failed, len(keys), first)
	}
	return nil
}
