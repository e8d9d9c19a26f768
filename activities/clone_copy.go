package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"go.temporal.io/sdk/activity"

	"github.com/splathost/splathost/ent/clonejob"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	splathost "github.com/splathost/splathost/sdk/go"
	"github.com/splathost/splathost/workflows/contract"
)

// storeCallTimeout bounds one copy or HEAD that the copy waits for rather than cancels: a
// CopyObject of the largest object (2 GiB) inside the store takes seconds, not minutes.
const storeCallTimeout = 10 * time.Minute

// copyItem is one object to copy. verify asks for a HEAD of the copy: the single objects of a
// plan were measured (and charged) by PrepareClone, possibly long before the copy.
type copyItem struct {
	src, dst string
	size     int64
	verify   bool
}

// CopyCloneObjects copies every planned object inside the store (S3 CopyObject: the bytes never
// pass through this process), Concurrency at a time, heartbeating its progress. A retry after
// a crash resumes: it lists the job's folder once and skips every object already there with the
// source's size (S3 writes an object whole or not at all), so nothing copied before the crash
// is copied again, including what was copied after the last heartbeat reached the server. A
// source object that vanished fails the job with 409 SOURCE_FILES_MISSING; a cancellation (the
// job was abandoned) stops the copies and returns.
func (a *Activities) CopyCloneObjects(ctx context.Context, in contract.CopyCloneInput) (contract.CopyCloneResult, error) {
	if in.SplatID == "" || in.Concurrency <= 0 || !objectkeys.SafePrefix(in.Prefix) {
		return contract.CopyCloneResult{}, badInput("CopyCloneObjects: job, a positive concurrency and the job's folder are required")
	}
	for _, o := range in.Plan.Objects {
		if !strings.HasPrefix(o.Dst, in.Prefix) {
			return contract.CopyCloneResult{}, badInput("CopyCloneObjects: %q is outside the job's folder", o.Dst)
		}
	}
	if in.Plan.FolderSrc != "" && (!strings.HasPrefix(in.Plan.FolderDst, in.Prefix) || !objectkeys.SafePrefix(in.Plan.FolderSrc)) {
		return contract.CopyCloneResult{}, badInput("CopyCloneObjects: bad folder %q → %q", in.Plan.FolderSrc, in.Plan.FolderDst)
	}
	var res contract.CopyCloneResult
	done := map[string]int64{}
	// floor is the progress an earlier attempt already showed (its last heartbeat, which the
	// clone API answered polls with) or more: what is already in the job's folder. A resumed
	// copy never reports less than it (polls must never go backwards, issue 12 point 13); its
	// count catches up as it skips what is done, then passes it.
	floor := 0
	if activity.HasHeartbeatDetails(ctx) {
		var last contract.CloneProgress
		if err := activity.GetHeartbeatDetails(ctx, &last); err == nil {
			floor = last.Copied
		}
	}
	if activity.HasHeartbeatDetails(ctx) || activity.GetInfo(ctx).Attempt > 1 {
		err := a.bucket().ListFolder(ctx, in.Prefix, func(page []s3types.Object) error {
			for _, o := range page {
				done[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
			}
			// A long listing keeps the attempt alive, at the progress already shown.
			activity.RecordHeartbeat(ctx, contract.CloneProgress{Copied: min(max(floor, len(done)), in.TotalObjects), Total: in.TotalObjects})
			return nil
		})
		if err != nil {
			return res, err
		}
	}
	floor = min(max(floor, len(done)), in.TotalObjects)
	// A store call in flight is never cancelled, only waited for: S3 finishes a CopyObject whose
	// client went away, so a copy cancelled at the first failure (or at the job's abandonment)
	// could land after this attempt returned and after the rollback emptied the job's folder,
	// leaving bytes nobody is charged for. The failure stops the queue; the calls end on their own.
	storeCtx := context.WithoutCancel(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The queue holds a whole listing page beyond the copies in flight, so the next page is
	// listed while this one is copied: with a queue as short as the pool, every page's listing
	// (0.2-0.6 s for 1 000 keys on versitygw) left the copies idle, about a tenth of a 5 000-tile
	// clone.
	items := make(chan copyItem, in.Concurrency+objectstore.Batch)
	var mu sync.Mutex
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	progress := contract.CloneProgress{Copied: floor, Total: in.TotalObjects}
	step := func(copied bool) {
		mu.Lock()
		defer mu.Unlock()
		if copied {
			res.Copied++
		} else {
			res.Skipped++
		}
		progress.Copied = max(floor, res.Copied+res.Skipped)
		// The SDK throttles what reaches the server; recording every object costs nothing.
		activity.RecordHeartbeat(ctx, progress)
	}
	var wg sync.WaitGroup
	for range in.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				if ctx.Err() != nil {
					continue // failed or cancelled: drain the queue without calling the store
				}
				if size, ok := done[it.dst]; ok && size == it.size {
					step(false)
					continue
				}
				if err := a.copyObject(storeCtx, it.src, it.dst); err != nil {
					fail(err)
					continue // drain: the producer stops on the cancellation
				}
				if it.verify {
					if err := a.verifyCopy(storeCtx, it); err != nil {
						fail(err)
						continue
					}
				}
				step(true)
			}
		}()
	}
	produce := func(it copyItem) bool {
		select {
		case items <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	activity.RecordHeartbeat(ctx, progress)
	func() {
		defer close(items)
		for _, o := range in.Plan.Objects {
			if !produce(copyItem{src: objectkeys.Sealed(o.Src), dst: o.Dst, size: o.Size, verify: true}) {
				return
			}
		}
		if in.Plan.FolderSrc == "" {
			return
		}
		var files int
		var bytes int64
		// The folder's committed copy (objectkeys.Sealed): what the source scene serves.
		folder := objectkeys.Sealed(in.Plan.FolderSrc)
		err := a.bucket().ListFolder(ctx, folder, func(page []s3types.Object) error {
			for _, o := range page {
				k := aws.ToString(o.Key)
				files, bytes = files+1, bytes+aws.ToInt64(o.Size)
				if !produce(copyItem{src: k, dst: in.Plan.FolderDst + strings.TrimPrefix(k, folder), size: aws.ToInt64(o.Size)}) {
					return ctx.Err()
				}
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			fail(err)
		}
		// The folder must hold exactly what the job reserved (the count and bytes recorded at
		// commit, or listed when the job was planned), checked by the one listing the copy needs
		// anyway: the copy fails whole, and rolls back, when tiles are gone — or when they grew
		// (a tile rewritten bigger than committed), since the clone would then hold more bytes
		// than it is charged for.
		if err == nil && in.Plan.FolderFiles > 0 && (files != in.Plan.FolderFiles || bytes != in.Plan.FolderBytes) {
			fail(folderMismatch(files, bytes, in.Plan.FolderFiles, in.Plan.FolderBytes))
		}
	}()
	wg.Wait()
	if firstErr != nil {
		return res, clientErrorOr(a.whyMissing(storeCtx, in.SplatID, firstErr))
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

// whyMissing tells a source that vanished because its customer was deleted (the deletion
// releases the job's row, then purges the customer's objects, possibly under the copy) from
// one whose files are gone while its scene lives: the first is the 404 FinalizeClone gives a
// released job, the second the spec's 409 SOURCE_FILES_MISSING. Other errors pass through.
// Without a database (the unit tests of the copy) the 409 stands.
func (a *Activities) whyMissing(ctx context.Context, jobID string, err error) error {
	var e *apperr.Error
	if a.Ent == nil || !errors.As(err, &e) || e.Extra["code"] != splathost.CodeSourceFilesMissing {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	held, qerr := a.Ent.CloneJob.Query().Where(clonejob.ID(jobID)).Exist(ctx)
	if qerr != nil || held {
		return err
	}
	return apperr.CustomerNotProvisioned(http.StatusNotFound)
}

// verifyCopy checks a copied single object has the size PrepareClone measured and reserved: a
// source rewritten at another size in between is refused (the job rolls back) rather than held
// at a size nobody is charged for.
func (a *Activities) verifyCopy(ctx context.Context, it copyItem) error {
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	head, err := a.Objects.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(it.dst)})
	if err != nil {
		return fmt.Errorf("checking the copy %s: %w", it.dst, err)
	}
	if n := aws.ToInt64(head.ContentLength); n != it.size {
		name := it.src[strings.LastIndex(it.src, "/")+1:]
		return sourceFilesMissing(fmt.Sprintf("%s holds %d bytes, %d were reserved", name, n, it.size))
	}
	return nil
}

// folderMismatch is the 409 of a LOD folder that does not hold what its scene recorded. Fewer
// files or bytes are the spec's missing source files; more bytes mean the stored files are not
// the ones committed either, so the answer is the same: the record's files are not in storage.
func folderMismatch(files int, bytes int64, wantFiles int, wantBytes int64) error {
	if files < wantFiles {
		return sourceFilesMissing(fmt.Sprintf("the LOD folder holds %d of %d files", files, wantFiles))
	}
	return sourceFilesMissing(fmt.Sprintf("the LOD folder holds %d files of %d bytes, the scene recorded %d files of %d bytes",
		files, bytes, wantFiles, wantBytes))
}

// copyObject copies src to dst inside the bucket. Objects are at most 2 GiB (the single-file
// maximum; LOD files are at most 50 MiB), well under CopyObject's 5 GiB limit.
func (a *Activities) copyObject(ctx context.Context, src, dst string) error {
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	_, err := a.Objects.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(dst),
		CopySource: aws.String(objectkeys.CopySource(a.Bucket, src)), MetadataDirective: s3types.MetadataDirectiveCopy})
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
		return sourceFilesMissing(src[strings.LastIndex(src, "/")+1:] + " was removed during the copy")
	}
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}
