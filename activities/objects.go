package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

// DeleteObjects removes the keys, then empties each prefix, in batches of 1000, heartbeating
// after every batch. Deleting a missing object is success, so a retry after a partial run, or a
// second run of the same purge, is harmless. Keys and prefixes outside the scene key space, or a
// prefix that would list a whole integration or more, are refused non-retryable: no row can
// turn this into a bucket-wide delete.
func (a *Activities) DeleteObjects(ctx context.Context, in contract.DeleteObjectsInput) (contract.DeleteObjectsResult, error) {
	for _, k := range in.Keys {
		if !objectkeys.SafeKey(k) {
			return contract.DeleteObjectsResult{}, badInput("refusing to delete key %q: outside the scene key space", k)
		}
	}
	for _, p := range in.Prefixes {
		if !objectkeys.SafePrefix(p) {
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
	err := a.bucket().DeleteKeys(ctx, in.Keys[p.KeysDone:], func(n int) {
		p.KeysDone += n
		p.Deleted += n
		activity.RecordHeartbeat(ctx, p)
	})
	if err != nil {
		return contract.DeleteObjectsResult{}, err
	}
	for p.PrefixesDone < len(in.Prefixes) {
		err := a.bucket().EmptyPrefix(ctx, in.Prefixes[p.PrefixesDone], func(n int) {
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

func badInput(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), contract.ErrBadInput, nil)
}
