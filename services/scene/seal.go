package scene

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// sealSlots bounds the seal copies in flight in the whole process, every commit's together:
// the store's CopyObject is the cost (versitygw on 2 cores: about 1 200-2 100 copies/s of tiny
// files with 8 in flight, no faster with 16, 32 or 64 and slower under load), so more in flight
// adds only queueing in the store and latency for every other tenant's reads. Two large commits
// at once share the slots instead of doubling the store's load.
const sealSlots = 8

// sealPool is the process's seal slots (sealSlots).
var sealPool = make(chan struct{}, sealSlots)

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

// sealFolder copies every declared object of a LOD ticket to the sealed folder, in the
// process's seal slots (sealPool). One listing of the upload folder first checks the folder as
// declared: a file absent or of another size than declared is the commit's 400 before anything
// is copied (a copy would only be work to undo). Each copy is conditional on the ETag that
// listing gave (objectstore.CopyIfMatch), so the sealed copy holds the listed bytes, of the
// declared size, and needs no listing of its own afterwards; a file PUT again meanwhile is a
// 400 too. A listing of the sealed folder tells which objects are sealed already, with the
// same bytes (ETag and size), by an earlier attempt whose copies outlived it (unseal could not
// remove them): those are not copied again, unless they are old enough for the bucket sweep
// to take them while this commit runs (objectkeys.SealedAttemptAge).
func (s *Service) sealFolder(ctx context.Context, t *ent.UploadTicket) error {
	uploaded, err := s.folderIndex(ctx, t.Prefix)
	if err != nil {
		return apperr.Internal(err)
	}
	missing := 0
	for _, o := range t.Objects {
		if _, ok := uploaded[o.Key]; !ok {
			missing++
		}
	}
	if missing > 0 {
		return apperr.Invalid("upload incomplete", fmt.Sprintf("lodFolderKey: %d of %d files were not uploaded", missing, len(t.Objects)))
	}
	for _, o := range t.Objects {
		if got := uploaded[o.Key].size; got != o.Size {
			return apperr.Invalid("upload does not match", fmt.Sprintf("lodFolderKey: %s has %d bytes, declared %d", o.RelativePath, got, o.Size))
		}
	}
	sealed, err := s.folderIndex(ctx, objectkeys.Sealed(t.Prefix))
	if err != nil {
		return apperr.Internal(err)
	}
	fresh := s.now().Add(-objectkeys.SealedAttemptAge / 2)
	g, gctx := errgroup.WithContext(ctx)
	for _, o := range t.Objects {
		up := uploaded[o.Key]
		if have, ok := sealed[sealedKey(o)]; ok && have.etag == up.etag && have.size == up.size && up.etag != "" && have.modified.After(fresh) {
			continue
		}
		if !takeSealSlot(gctx) {
			break
		}
		g.Go(func() error {
			defer func() { <-sealPool }()
			err := objectstore.CopyIfMatch(gctx, s.store.Client, s.store.Bucket, o.Key, sealedKey(o), up.etag)
			switch {
			case isNoSuchKey(err):
				return apperr.Invalid("upload incomplete", fmt.Sprintf("lodFolderKey: %s was removed during the commit", o.RelativePath))
			case objectstore.IsPreconditionFailed(err):
				return apperr.Invalid("upload does not match", fmt.Sprintf("lodFolderKey: %s was uploaded again during the commit; commit again", o.RelativePath))
			case err != nil:
				return apperr.Internal(err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// A request out of its budget may stop the loop before any copy fails (gctx itself always
	// ends with Wait).
	if err := ctx.Err(); err != nil {
		return apperr.Internal(err)
	}
	return nil
}

// takeSealSlot waits for a slot of sealPool; false when ctx ended first.
func takeSealSlot(ctx context.Context) bool {
	select {
	case sealPool <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// unsealBudget bounds how long a failed commit spends removing its sealed copies before it
// answers. It runs after the request's budget when that budget is what ran out, so it fits in
// the time the gateway still waits (httpx.UpstreamTimeout less httpx.RequestBudget, 15 s), with room for the answer.
const unsealBudget = 8 * time.Second

// sweptWithin is how soon the bucket sweep removes a sealed copy a failed commit left: the
// sweep runs every 15 minutes (workflows.OrphanSweepEvery) and leaves objects younger than 10
// minutes alone (workflows' strayMinAge, longer than objectkeys.SealedAttemptAge).
const sweptWithin = 25 * time.Minute

// unseal removes the sealed copies under sealedPrefix (a folder, or one sealed key) of a commit
// that failed with cause, before the answer: a failed commit leaves nothing behind. It runs with
// the ticket still locked (the check that failed runs in the commit's transaction), so no other
// commit of the same upload is sealing beside it. What it cannot remove within unsealBudget the
// bucket sweep does (activities.DeleteStrayObjects: a sealed copy of an uncommitted ticket older
// than objectkeys.SealedAttemptAge), and the answer then says so instead of "changed nothing".
func (s *Service) unseal(ctx context.Context, sealedPrefix string, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsealBudget)
	defer cancel()
	removed := 0
	err := s.bucket().EmptyPrefix(ctx, sealedPrefix, func(n int) { removed += n })
	if err == nil {
		return cause
	}
	s.log.WarnContext(ctx, "a failed commit could not remove its sealed copies; the bucket sweep will",
		"prefix", sealedPrefix, "removed", removed, "error", err)
	e := apperr.From(cause)
	out := *e
	msg := e.Message
	if e.Code() == apperr.CodeUnavailable {
		msg = "a store this request needs is unavailable or too slow; retry"
	}
	out.Message = fmt.Sprintf("%s; the copies this commit made of its uploads could not all be removed, and the bucket sweep removes them within %d minutes",
		msg, int(sweptWithin.Minutes()))
	return &out
}

// listed is what a folder listing says of an object.
type listed struct {
	etag     string
	size     int64
	modified time.Time
}

// folderIndex lists a folder: each key's ETag and size.
func (s *Service) folderIndex(ctx context.Context, prefix string) (map[string]listed, error) {
	out := map[string]listed{}
	err := s.bucket().ListFolder(ctx, prefix, func(page []s3types.Object) error {
		for _, o := range page {
			out[aws.ToString(o.Key)] = listed{etag: aws.ToString(o.ETag), size: aws.ToInt64(o.Size), modified: aws.ToTime(o.LastModified)}
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
