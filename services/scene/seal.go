package scene

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
)

// Write-once bytes. An upload URL stays valid for its whole window, so what a client PUTs to it
// after the commit must not reach the scene: a commit (and an editor save attaching an upload)
// first copies every uploaded object to its sealed key (objectkeys.Sealed), which no upload URL
// names, then checks the copy — size, type, first bytes — and every reader (the asset route,
// renditions, clones) reads the copy. Checking the copy rather than the upload closes the gap
// between the check and the copy too. A multipart upload needs no copy: it is created at its
// sealed key, and once completed its part URLs write nothing. The upload objects themselves,
// and whatever a later PUT recreates, are removed by the bucket sweep
// (activities.DeleteStrayObjects), not by the commit: on a store over a file system (versitygw's
// posix backend) a delete removes the emptied parent directories, which raced the customer's
// next upload into a sibling folder (its PUT answered 409).

// sealParallelism bounds the copies of one LOD folder in flight (the store's CopyObject is
// the cost: about 600-750 objects/s with 16 workers on versitygw).
const sealParallelism = 16

// bucket is the asset bucket's shared operations (objectstore.Bucket).
func (s *Service) bucket() objectstore.Bucket {
	return objectstore.Bucket{API: s.store.Client, Name: s.store.Bucket}
}

// sealedKey is where the committed bytes of an upload object live.
func sealedKey(o schema.UploadObject) string { return objectkeys.Sealed(o.Key) }

// seal copies one uploaded object of t to its sealed key; an object that was never uploaded is
// the commit's 400. Multipart uploads are created at their sealed key and need no copy.
func (s *Service) seal(ctx context.Context, field string, t *ent.UploadTicket, o schema.UploadObject) error {
	if t.MultipartUploadID != nil {
		return nil
	}
	err := objectstore.Copy(ctx, s.store.Client, s.store.Bucket, o.Key, sealedKey(o))
	if isNoSuchKey(err) {
		return apperr.Invalid("upload not found", field+": nothing was uploaded to this URL")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	return nil
}

// sealFolder copies every declared object of a LOD ticket to the sealed folder, 16 at a time,
// and counts the declared objects that were never uploaded. One listing of each folder first
// tells which objects are absent (no copy attempt needed to learn it) and which are sealed
// already, with the same bytes (ETag and size) as their upload: a commit that ran out of its
// request budget (503, "retry") sealed part of a large folder, and its retry copies only the
// rest, so every retry moves the commit forward instead of starting it again.
func (s *Service) sealFolder(ctx context.Context, t *ent.UploadTicket) (missing int, err error) {
	uploaded, err := s.folderIndex(ctx, t.Prefix)
	if err != nil {
		return 0, apperr.Internal(err)
	}
	sealed, err := s.folderIndex(ctx, objectkeys.Sealed(t.Prefix))
	if err != nil {
		return 0, apperr.Internal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sealParallelism)
	counts := make(chan struct{}, len(t.Objects))
	for _, o := range t.Objects {
		up, ok := uploaded[o.Key]
		if !ok {
			missing++
			continue
		}
		if have, ok := sealed[sealedKey(o)]; ok && have == up && up.etag != "" {
			continue
		}
		g.Go(func() error {
			err := objectstore.Copy(gctx, s.store.Client, s.store.Bucket, o.Key, sealedKey(o))
			if isNoSuchKey(err) { // removed since the listing
				counts <- struct{}{}
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, apperr.Internal(err)
	}
	return missing + len(counts), nil
}

// listed is what a folder listing says of an object.
type listed struct {
	etag string
	size int64
}

// folderIndex lists a folder: each key's ETag and size.
func (s *Service) folderIndex(ctx context.Context, prefix string) (map[string]listed, error) {
	out := map[string]listed{}
	err := s.bucket().ListFolder(ctx, prefix, func(page []s3types.Object) error {
		for _, o := range page {
			out[aws.ToString(o.Key)] = listed{etag: aws.ToString(o.ETag), size: aws.ToInt64(o.Size)}
		}
		return nil
	})
	return out, err
}

func isNoSuchKey(err error) bool {
	var nk *s3types.NoSuchKey
	var api smithy.APIError
	return errors.As(err, &nk) || errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound")
}

// verifySealed checks the sealed copy of an uploaded object has its declared size and type and
// starts like its format.
func (s *Service) verifySealed(ctx context.Context, field string, o schema.UploadObject) error {
	key := sealedKey(o)
	st, found, err := s.bucket().Head(ctx, key)
	if err != nil {
		return apperr.Internal(err)
	}
	if !found {
		return apperr.Invalid("upload not found", field+": nothing was uploaded to this URL")
	}
	if st.Size != o.Size {
		return apperr.Invalid("upload does not match", fmt.Sprintf("%s: uploaded %d bytes, declared %d", field, st.Size, o.Size))
	}
	if st.ContentType != o.ContentType {
		return apperr.Invalid("upload does not match", field+": uploaded with another content type than declared")
	}
	return s.sniffObject(ctx, field, key, o.Size)
}
