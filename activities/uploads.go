package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

// DeleteOrphanUploads removes uploads that never became a scene: the store's multipart upload
// of a resumable ticket, the objects of each ticket, then the ticket row, a batch at a time with a heartbeat after each. A ticket row goes only
// after its objects, so a crash in between leaves the row for the next run, and a rerun
// deletes already-missing objects without complaint. Progress needs no resume point: the
// query finds only what is left.
//
// MinAge must exceed the commit path's grace after expires_at (commitGrace in
// services/scene/commit.go), so no commit can still claim a ticket swept here; the final
// delete re-checks committed_at anyway.
func (a *Activities) DeleteOrphanUploads(ctx context.Context, in contract.DeleteOrphanUploadsInput) (contract.DeleteOrphanUploadsResult, error) {
	if in.MinAge <= 0 || in.BatchSize <= 0 || in.MaxTickets <= 0 {
		return contract.DeleteOrphanUploadsResult{}, badInput("DeleteOrphanUploads: min age, batch size and max tickets must be positive")
	}
	var out contract.DeleteOrphanUploadsResult
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &out) // only the running totals; a bad value restarts them
		out.More = false
	}
	for done := 0; done < in.MaxTickets; {
		tickets, err := a.Ent.UploadTicket.Query().
			Where(uploadticket.CommittedAtIsNil(), uploadticket.ExpiresAtLT(time.Now().Add(-in.MinAge))).
			Order(ent.Asc(uploadticket.FieldExpiresAt)).Limit(min(in.BatchSize, in.MaxTickets-done)).All(ctx)
		if err != nil {
			return out, err
		}
		if len(tickets) == 0 {
			return out, nil
		}
		var keys, prefixes, ids []string
		for _, t := range tickets {
			if err := a.abortMultipart(ctx, t); err != nil {
				return out, err
			}
			k, p, ok := ticketObjects(t)
			if !ok {
				// A malformed row is never a reason to list a broad prefix: drop the row and log.
				a.Log.Warn("orphan sweep: ticket prefix outside the scene key space; deleting the row only",
					"ticket", t.ID, "prefix", t.Prefix)
			}
			keys, prefixes, ids = append(keys, k...), append(prefixes, p...), append(ids, t.ID)
		}
		if err := a.bucket().DeleteKeys(ctx, keys, func(int) { activity.RecordHeartbeat(ctx, out) }); err != nil {
			return out, err
		}
		objects := len(keys)
		for _, p := range prefixes {
			if err := a.bucket().EmptyPrefix(ctx, p, func(n int) {
				objects += n
				activity.RecordHeartbeat(ctx, out)
			}); err != nil {
				return out, err
			}
		}
		n, err := a.Ent.UploadTicket.Delete().Where(uploadticket.IDIn(ids...), uploadticket.CommittedAtIsNil()).Exec(ctx)
		if err != nil {
			return out, err
		}
		out.Tickets += n
		out.Objects += objects
		done += len(tickets)
		activity.RecordHeartbeat(ctx, out)
		if len(tickets) < in.BatchSize {
			return out, nil
		}
	}
	out.More = true
	return out, nil
}

// abortMultipart drops the store's multipart upload of a resumable ticket, with the parts it
// holds (invisible to listings, but stored and paid for). An upload already gone — completed,
// aborted by its client, or aborted by an earlier run — is success.
func (a *Activities) abortMultipart(ctx context.Context, t *ent.UploadTicket) error {
	if t.MultipartUploadID == nil || len(t.Objects) != 1 || !strings.HasPrefix(t.Objects[0].Key, t.Prefix) {
		return nil
	}
	if err := a.bucket().AbortUpload(ctx, objectkeys.Sealed(t.Objects[0].Key), *t.MultipartUploadID); err != nil {
		return fmt.Errorf("aborting the multipart upload of ticket %s: %w", t.ID, err)
	}
	return nil
}

// ticketObjects returns what to delete for a ticket: its declared keys and their sealed copies, and for a LOD folder the
// folder itself, since the client may have uploaded only part of what it declared. Only keys
// under the ticket's own prefix count, and only a prefix of the scene key space.
func ticketObjects(t *ent.UploadTicket) (keys, prefixes []string, ok bool) {
	if !strings.HasPrefix(t.Prefix, objectkeys.Integration(t.IntegrationID)) || !objectkeys.SafePrefix(t.Prefix) {
		return nil, nil, false
	}
	for _, o := range t.Objects {
		if strings.HasPrefix(o.Key, t.Prefix) && objectkeys.SafeKey(o.Key) {
			// The upload and its sealed copy (a commit that sealed and then failed leaves one).
			keys = append(keys, objectkeys.WithSealed(o.Key)...)
		}
	}
	if t.Kind == uploadticket.KindLodFolder {
		prefixes = append(prefixes, objectkeys.WithSealed(t.Prefix)...)
	}
	return keys, prefixes, true
}
