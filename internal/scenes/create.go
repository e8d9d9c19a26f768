package scenes

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/assetpurge"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/scenerow"
	"github.com/splathost/splathost/workflows/contract"
)

// RenditionPolicy is a deployment's rendition settings (config.Config.RenditionMinBytes and
// MediaTaskQueue).
type RenditionPolicy struct {
	// MinBytes is the smallest upload that gets a rendition.
	MinBytes int64
	// Queue is the media task queue whose dispatcher starts renditions.
	Queue string
}

// PlanRendition plans row's rendition in its commit's transaction (processing_state is its
// outbox): an upload with a rendition format and at least r.MinBytes gets one, in a folder named
// by the scene's id, which is chosen here rather than by the insert; a smaller one records why
// it gets none. A .sog or LOD folder without image gets its poster the same way (the scene is
// pending until it is rendered, then skipped: it has no rendition).
func PlanRendition(row *scenerow.New, r RenditionPolicy) {
	if !contract.Processed(row.SplatType, row.SplatURL, row.ImageURL != "") {
		return
	}
	if row.FileSizeBytes < r.MinBytes {
		row.ProcessingMessage = "smaller than this deployment's rendition threshold"
		return
	}
	row.ID = ids.New()
	row.RenditionPrefix = objectkeys.RenditionFolder(row.IntegrationID, row.OwnerID, row.ID)
	row.RenditionQueue = r.Queue
}

// UploadTaken aborts a transaction when one of its uploads was committed (or claimed by a
// refused commit's purge) after the caller saw it free.
type UploadTaken struct{ TicketID string }

// Error names the ticket taken.
func (e *UploadTaken) Error() string {
	return "upload ticket " + e.TicketID + " taken by another commit"
}

// LockUploads locks the ticket rows of ticketIDs (in id order, so two commits never wait on
// each other in a cycle) for the caller's transaction, which seals and checks their uploads and
// commits them: a ticket committed meanwhile is an *UploadTaken.
func LockUploads(ctx context.Context, tx *ent.Tx, ticketIDs []string) error {
	free, err := tx.UploadTicket.Query().Where(uploadticket.IDIn(ticketIDs...), uploadticket.CommittedAtIsNil()).
		Order(ent.Asc(uploadticket.FieldID)).ForUpdate().IDs(ctx)
	if err != nil {
		return err
	}
	for _, id := range ticketIDs {
		if !slices.Contains(free, id) {
			return &UploadTaken{TicketID: id}
		}
	}
	return nil
}

// UploadPurge writes, in tx, the outbox row (asset_purges, kind upload) of owner's uploads to
// remove: the tickets whose objects go if they are still uncommitted when the purge runs, and
// single keys (an unused image of a committed ticket). The PurgeAssets workflow re-checks both
// against the owner's scenes before deleting anything. Nothing to remove writes nothing (nil).
func UploadPurge(ctx context.Context, tx *ent.Tx, owner *ent.ExternalUser, tickets, keys []string) (*ent.AssetPurge, error) {
	if len(tickets)+len(keys) == 0 {
		return nil, nil
	}
	return tx.AssetPurge.Create().SetKind(assetpurge.KindUpload).SetIntegrationID(owner.IntegrationID).
		SetOwnerID(owner.ID).SetExternalUserID(owner.ExternalUserID).
		SetTicketIds(tickets).SetKeys(keys).Save(ctx)
}

// NewScene is a commit's scene, its uploads resolved by the caller.
type NewScene struct {
	// Owner is the committing customer, charged with AccountID's account.
	Owner     *ent.ExternalUser
	AccountID string
	// Row is the scene row; Create plans its rendition (PlanRendition).
	Row scenerow.New
	// Tickets are the upload tickets the commit spends (the request's splatUrl field names
	// them in a 409), locked before Checks run.
	Tickets []string
	// Checks seal and check each upload with its ticket locked: a second commit of the same
	// upload waits for the lock and then finds it committed, so it never copies over the
	// sealed bytes this commit checked.
	Checks []func(context.Context) error
	// Unused are objects of a spent ticket the scene does not use (an image ticket's other
	// image): purged, since the orphan sweep takes only uncommitted tickets.
	Unused []string
}

// Create makes n's scene in one transaction: the quota charge (a refusal writes the purge of
// the commit's uploads and is recorded as the request's outcome), the row with its planned
// rendition, the tickets spent (one another commit won is the 409 of AlreadyCommitted), the
// webhook events (splat.created, and splat.published for a public scene), the change notice and
// the 201 answer rendered by answer (recorded for a keyed request). It returns the answer, the
// scene and the outbox row of objects to purge, which the caller starts: after a refusal too,
// which is then the error.
func (s *Store) Create(ctx context.Context, n NewScene, answer func(*ent.Scene, *ent.Account) any) (*idempotency.Recorded, *ent.Scene, *ent.AssetPurge, error) {
	owner := n.Owner
	var sc *ent.Scene
	var out *idempotency.Recorded
	var refused error
	var purge *ent.AssetPurge
	var taken *UploadTaken
	var hooks events.Batch
	PlanRendition(&n.Row, s.Rendition)
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		if err := LockUploads(ctx, tx, n.Tickets); err != nil {
			errors.As(err, &taken)
			return err
		}
		for _, check := range n.Checks {
			if err := check(ctx); err != nil {
				return err
			}
		}
		_, acct, err := quota.Reserve(ctx, tx, owner.ID, n.AccountID, quota.Charge{Bytes: n.Row.FileSizeBytes, Slot: true})
		if err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) || (e.Status != http.StatusRequestEntityTooLarge && e.Status != http.StatusForbidden) {
				return err
			}
			// The spec: when commit fails for quota, remove the uploaded objects. Not here and
			// not blindly: a concurrent commit of the same upload may have just won, so the
			// outbox row names the tickets, committed with the refusal, and the purge workflow
			// removes only those still uncommitted when it runs (activities.ClaimUploads).
			refused = err
			if purge, err = UploadPurge(ctx, tx, owner, n.Tickets, nil); err != nil {
				return err
			}
			// The refusal is this request's outcome, committed with its purge: a keyed retry
			// reads it rather than finding its uploads gone.
			_, err = idempotency.Record(ctx, tx, e.Status, e.Body())
			return err
		}
		create := scenerow.Create(tx.Scene, n.Row)
		if n.Row.Visibility == scene.VisibilityPublic {
			create.SetFirstPublishedAt(s.Now())
		}
		if sc, err = create.Save(ctx); err != nil {
			return err
		}
		for _, id := range n.Tickets {
			// The committed_at guard makes a second concurrent commit of the same upload fail,
			// and so does a ticket a refused commit's purge has claimed (deleted).
			c, err := tx.UploadTicket.Update().Where(uploadticket.ID(id), uploadticket.CommittedAtIsNil()).
				SetCommittedAt(s.Now()).SetSceneID(sc.ID).Save(ctx)
			if err != nil {
				return err
			}
			if c == 0 {
				taken = &UploadTaken{TicketID: id}
				return taken
			}
		}
		if err := s.Events.EmitSplat(ctx, tx, &hooks, events.SplatCreated, sc, owner.ExternalUserID); err != nil {
			return err
		}
		if sc.Visibility == scene.VisibilityPublic {
			if err := s.Events.EmitSplat(ctx, tx, &hooks, events.SplatPublished, sc, owner.ExternalUserID); err != nil {
				return err
			}
		}
		if purge, err = UploadPurge(ctx, tx, owner, nil, n.Unused); err != nil {
			return err
		}
		if err := db.NotifyScenesChanged(ctx, tx, owner.IntegrationID, sc.ID); err != nil {
			return err
		}
		out, err = idempotency.Record(ctx, tx, http.StatusCreated, answer(sc, acct))
		return err
	})
	switch {
	case taken != nil:
		return nil, nil, nil, s.AlreadyCommitted(ctx, "splatUrl", taken.TicketID, owner)
	case err != nil:
		return nil, nil, nil, err
	case refused != nil:
		return nil, nil, purge, refused
	}
	s.Events.Flush(ctx, &hooks)
	// A pending scene's rendition is started by the media worker's dispatcher, paced and fair
	// between integrations (internal/worker/renditions_dispatch.go): the row is the outbox.
	return out, sc, purge, nil
}
