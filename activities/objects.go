package activities

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/workflows/contract"
)

// deleteBatch is the S3 DeleteObjects maximum, and the ListObjectsV2 page size.
const deleteBatch = 1000

// DeleteObjects removes the keys, then empties each prefix, in batches of 1000, heartbeating
// after every batch. Deleting a missing object is success, so a retry after a partial run, or a
// second run of the same purge, is harmless. Keys and prefixes outside the scene key space, or a
// prefix that would list a whole integration or more, are refused non-retryable: no row can
// turn this into a bucket-wide delete.
func (a *Activities) DeleteObjects(ctx context.Context, in contract.DeleteObjectsInput) (contract.DeleteObjectsResult, error) {
	for _, k := range in.Keys {
		if !safeKey(k) {
			return contract.DeleteObjectsResult{}, badInput("refusing to delete key %q: outside the scene key space", k)
		}
	}
	for _, p := range in.Prefixes {
		if !safePrefix(p) {
			return contract.DeleteObjectsResult{}, badInput("refusing to empty prefix %q: too broad or outside the scene key space", p)
		}
	}
	var p contract.DeleteProgress
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &p); err != nil || p.KeysDone < 0 || p.PrefixesDone < 0 ||
			p.KeysDone > len(in.Keys) || p.PrefixesDone > len(in.Prefixes) {
			// Details from another input shape: starting over is always correct, only slower.
			p = contract.DeleteProgress{}
		}
	}
	for p.KeysDone < len(in.Keys) {
		batch := in.Keys[p.KeysDone:min(p.KeysDone+deleteBatch, len(in.Keys))]
		if err := a.deleteKeys(ctx, batch); err != nil {
			return contract.DeleteObjectsResult{}, err
		}
		p.KeysDone += len(batch)
		p.Deleted += len(batch)
		activity.RecordHeartbeat(ctx, p)
	}
	for p.PrefixesDone < len(in.Prefixes) {
		err := a.emptyPrefix(ctx, in.Prefixes[p.PrefixesDone], func(n int) {
			p.Deleted += n
			activity.RecordHeartbeat(ctx, p)
		})
		if err != nil {
			return contract.DeleteObjectsResult{}, err
		}
		p.PrefixesDone++
		activity.RecordHeartbeat(ctx, p)
	}
	return contract.DeleteObjectsResult{Deleted: p.Deleted}, nil
}

// listFolder lists prefix a page at a time (1000 keys, the S3 maximum), in key order. It lists
// after the last key seen rather than with a continuation token, which stays valid however the
// store treats deletions under a running listing (emptyPrefix deletes each page it is given).
func (a *Activities) listFolder(ctx context.Context, prefix string, page func([]s3types.Object) error) error {
	var after *string
	for {
		out, err := a.Objects.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(a.Bucket),
			Prefix: aws.String(prefix), StartAfter: after, MaxKeys: aws.Int32(deleteBatch)})
		if err != nil {
			return fmt.Errorf("listing %s: %w", prefix, err)
		}
		if len(out.Contents) == 0 {
			return nil
		}
		if err := page(out.Contents); err != nil {
			return err
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		after = out.Contents[len(out.Contents)-1].Key
	}
}

// emptyPrefix lists prefix a page at a time and deletes each page before reading the next, so
// a 20 000-tile LOD folder never sits in memory. It lists after the last key seen rather than
// with a continuation token, which stays valid however the store treats deletions under a
// running listing. done reports each deleted page.
func (a *Activities) emptyPrefix(ctx context.Context, prefix string, done func(n int)) error {
	return a.listFolder(ctx, prefix, func(page []s3types.Object) error {
		keys := make([]string, 0, len(page))
		for _, o := range page {
			keys = append(keys, aws.ToString(o.Key))
		}
		if err := a.deleteKeys(ctx, keys); err != nil {
			return err
		}
		done(len(keys))
		return nil
	})
}

// deleteKeys removes up to 1000 objects in one request. An object that is already gone is
// success.
func (a *Activities) deleteKeys(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ids := make([]s3types.ObjectIdentifier, len(keys))
	for i, k := range keys {
		ids[i] = s3types.ObjectIdentifier{Key: aws.String(k)}
	}
	out, err := a.Objects.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(a.Bucket),
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

// safeKey accepts a key of the scene key space: i/<integration>/…, with no empty or dot
// segments.
func safeKey(k string) bool {
	parts := strings.Split(k, "/")
	if len(parts) < 3 || parts[0] != "i" {
		return false
	}
	for _, s := range parts {
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	return true
}

// safePrefix accepts a folder at least four levels down the scene key space (a customer's
// objects, i/<integration>/u/<customer>/, or narrower), ending in a slash so that it never
// matches a sibling whose name merely starts the same.
func safePrefix(p string) bool {
	body, ok := strings.CutSuffix(p, "/")
	return ok && safeKey(body) && strings.Count(body, "/") >= 3
}

func badInput(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), contract.ErrBadInput, nil)
}
