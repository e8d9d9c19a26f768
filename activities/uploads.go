package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/predicate"
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
	if in.MultipartIdle > 0 {
		if err := a.deleteIdleMultiparts(ctx, in, &out); err != nil {
			return out, err
		}
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
		if err := a.removeTickets(ctx, tickets, &out); err != nil {
			return out, err
		}
		done += len(tickets)
		if len(tickets) < in.BatchSize {
			return out, nil
		}
	}
	out.More = true
	return out, nil
}

// removeTickets removes uncommitted tickets: the store's multipart upload of each, their
// objects, then the rows that are still uncommitted (and match also), counted into out.
func (a *Activities) removeTickets(ctx context.Context, tickets []*ent.UploadTicket, out *contract.DeleteOrphanUploadsResult,
	also ...predicate.UploadTicket) error {
	var keys, prefixes, ids []string
	for _, t := range tickets {
		if err := a.abortMultipart(ctx, t); err != nil {
			return err
		}
		k, p, ok := ticketObjects(t)
		if !ok {
			// A malformed row is never a reason to list a broad prefix: drop the row and log.
			a.Log.Warn("orphan sweep: ticket prefix outside the scene key space; deleting the row only",
				"ticket", t.ID, "prefix", t.Prefix)
		}
		keys, prefixes, ids = append(keys, k...), append(prefixes, p...), append(ids, t.ID)
	}
	if err := a.bucket().DeleteKeys(ctx, keys, func(int) { activity.RecordHeartbeat(ctx, *out) }); err != nil {
		return err
	}
	objects := len(keys)
	for _, p := range prefixes {
		if err := a.bucket().EmptyPrefix(ctx, p, func(n int) {
			objects += n
			activity.RecordHeartbeat(ctx, *out)
		}); err != nil {
			return err
		}
	}
	where := append([]predicate.UploadTicket{uploadticket.IDIn(ids...), uploadticket.CommittedAtIsNil()}, also...)
	n, err := a.Ent.UploadTicket.Delete().Where(where...).Exec(ctx)
	if err != nil {
		return err
	}
	out.Tickets += n
	out.Objects += objects
	activity.RecordHeartbeat(ctx, *out)
	return nil
}

// deleteIdleMultiparts removes multipart uploads whose parts stopped arriving
// (contract.DeleteOrphanUploadsInput.MultipartIdle), at most MaxTickets of them: their expiresAt
// is a day away, but an upload nobody feeds must not hold its room, or its parts, that long.
// The store's part times tell whether parts keep arriving. An upload the store no longer has
// (completed, or aborted by its client) is left to the rules above.
func (a *Activities) deleteIdleMultiparts(ctx context.Context, in contract.DeleteOrphanUploadsInput, out *contract.DeleteOrphanUploadsResult) error {
	now := time.Now()
	tickets, err := a.Ent.UploadTicket.Query().Where(uploadticket.CommittedAtIsNil(), uploadticket.MultipartUploadIDNotNil(),
		uploadticket.MultipartCompletedAtIsNil(), uploadticket.CreatedAtLT(now.Add(-in.MultipartIdle))).
		Order(ent.Asc(uploadticket.FieldCreatedAt)).Limit(in.MaxTickets).All(ctx)
	if err != nil {
		return err
	}
	var idle []*ent.UploadTicket
	for _, t := range tickets {
		if len(t.Objects) != 1 {
			continue
		}
		last, found, err := a.bucket().LastPart(ctx, objectkeys.Sealed(t.Objects[0].Key), *t.MultipartUploadID)
		if err != nil {
			return fmt.Errorf("listing the parts of ticket %s: %w", t.ID, err)
		}
		if found && now.Sub(later(last, t.CreatedAt)) >= in.MultipartIdle {
			idle = append(idle, t)
		}
	}
	for len(idle) > 0 {
		batch := idle[:min(len(idle), in.BatchSize)]
		idle = idle[len(batch):]
		// Completed since the query: the upload is whole and waits for its commit.
		if err := a.removeTickets(ctx, batch, out, uploadticket.MultipartCompletedAtIsNil()); err != nil {
			return err
		}
	}
	return nil
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
