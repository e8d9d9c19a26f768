package scene

import (
	"context"
	"errors"
	"net/http"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/assetpurge"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/scenerow"
	"github.com/splathost/splathost/workflows/contract"
)

// createScene makes the committed scene of owner from its checked plan, in one transaction:
// the quota charge (a refusal writes the purge of the commit's uploads and answers 413 or
// 403), the scene row with its planned rendition, the tickets spent (a ticket another commit
// won answers 409), the webhook events, the scene's change notice and the 201 answer (rendered
// by answer and recorded with the effect for a keyed request: idempotency.Record). After the
// commit it starts the purge, the events' deliveries and the rendition.
func (s *Service) createScene(ctx context.Context, accountID string, owner *ent.ExternalUser, req *commitRequest, p *commitPlan,
	answer func(*ent.Scene, *ent.Account) any) (*idempotency.Recorded, error) {
	var sc *ent.Scene
	var acct *ent.Account
	var out *idempotency.Recorded
	// refused is the quota answer of a commit the transaction turned down, and purge the outbox
	// row of objects to remove (the refused commit's uploads, or the unused image of a commit).
	var refused error
	var purge *ent.AssetPurge
	var taken *errUploadTaken
	// hooks are the webhook events of the commit (splat.created, and splat.published for a
	// scene committed public), written with the scene and started after the commit.
	var hooks events.Batch
	err := s.db.InTx(ctx, func(tx *ent.Tx) error {
		// The uploads are sealed and checked with their tickets locked: a second commit of the
		// same upload waits here and then finds it committed, so it never copies over the sealed
		// bytes this commit checked (seal.go).
		if err := lockUploads(ctx, tx, ticketIDs(p.assets)); err != nil {
			var t *errUploadTaken
			if errors.As(err, &t) {
				taken = t
			}
			return err
		}
		for _, check := range p.checks {
			if err := check(ctx); err != nil {
				return err
			}
		}
		var err error
		if _, acct, err = quota.Reserve(ctx, tx, owner.ID, accountID, quota.Charge{Bytes: p.size, Slot: true}); err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) || (e.Status != http.StatusRequestEntityTooLarge && e.Status != http.StatusForbidden) {
				return err
			}
			// The spec: when commit fails for quota, remove the uploaded objects. Not here and
			// not blindly: a concurrent commit of the same upload may have just won, so the
			// outbox row names the tickets, committed with the refusal, and the purge workflow
			// removes only those still uncommitted when it runs (activities.ClaimUploads).
			refused = err
			if purge, err = s.uploadPurge(ctx, tx, owner, owner.IntegrationID, ticketIDs(p.assets), nil); err != nil {
				return err
			}
			// The refusal is this request's outcome, committed with its purge: a keyed retry
			// reads it rather than finding its uploads gone.
			_, err = idempotency.Record(ctx, tx, e.Status, e.Body())
			return err
		}
		row := scenerow.New{IntegrationID: owner.IntegrationID, OwnerID: owner.ID, Title: req.title,
			Description: req.description, Visibility: scene.Visibility(req.visibility), SplatType: req.splatType,
			SplatURL: req.splatURL, LodFolderKey: p.lodKey, LodFiles: p.lodFiles, ImageURL: req.imageURL,
			InitialCameraPosition: req.cameraPosition, InitialCameraRotation: req.cameraRotation,
			// With no camera in levelData, the commit's initial camera becomes its start camera.
			LevelData:     seedCamera(req.levelData, req.cameraPosition, req.cameraRotation),
			FileSizeBytes: p.size, AssetKeys: p.keys}
		if req.depthURL != "" {
			row.ThumbnailDepthURL = &req.depthURL
		}
		// A rendition is planned in the same transaction (processing_state is its outbox);
		// the scene's id names its folder, so it is chosen here rather than by the insert.
		if _, ok := contract.RenditionFormat(req.splatType, req.splatURL); ok {
			if p.size >= s.clones.RenditionMinBytes {
				row.ID = ids.New()
				row.RenditionPrefix = objectkeys.RenditionFolder(owner.IntegrationID, owner.ID, row.ID)
				row.RenditionQueue = s.clones.MediaTaskQueue
			} else {
				row.ProcessingMessage = "smaller than this deployment's rendition threshold"
			}
		}
		create := scenerow.Create(tx.Scene, row)
		if req.visibility == "public" {
			create.SetFirstPublishedAt(s.now())
		}
		if sc, err = create.Save(ctx); err != nil {
			return err
		}
		for _, a := range p.assets {
			// The committed_at guard makes a second concurrent commit of the same upload fail,
			// and so does a ticket a refused commit's purge has claimed (deleted).
			n, err := tx.UploadTicket.Update().Where(uploadticket.ID(a.ticket.ID), uploadticket.CommittedAtIsNil()).
				SetCommittedAt(s.now()).SetSceneID(sc.ID).Save(ctx)
			if err != nil {
				return err
			}
			if n == 0 {
				taken = &errUploadTaken{ticketID: a.ticket.ID}
				return taken
			}
		}
		if err := s.events.EmitSplat(ctx, tx, &hooks, events.SplatCreated, sc, owner.ExternalUserID); err != nil {
			return err
		}
		if sc.Visibility == scene.VisibilityPublic {
			if err := s.events.EmitSplat(ctx, tx, &hooks, events.SplatPublished, sc, owner.ExternalUserID); err != nil {
				return err
			}
		}
		if len(p.unused) > 0 {
			// The ticket is spent; an image it signed but the scene does not use would be
			// orphaned (the sweep takes only uncommitted tickets).
			if purge, err = s.uploadPurge(ctx, tx, owner, owner.IntegrationID, nil, p.unused); err != nil {
				return err
			}
		}
		if err := sceneChanged(ctx, tx, owner.IntegrationID, sc.ID); err != nil {
			return err
		}
		out, err = idempotency.Record(ctx, tx, http.StatusCreated, answer(sc, acct))
		return err
	})
	if taken != nil {
		return nil, s.alreadyCommitted(ctx, "splatUrl", taken.ticketID, owner)
	}
	if err != nil {
		return nil, err
	}
	s.startAssetPurge(ctx, purge)
	if refused != nil {
		return nil, refused
	}
	s.invalidateScene(ctx, owner.IntegrationID, sc.ID)
	s.events.Flush(ctx, &hooks)
	// A pending scene's rendition is started by the media worker's dispatcher, paced and fair
	// between integrations (internal/worker/renditions_dispatch.go): the row is the outbox.
	return out, nil
}

// uploadPurge writes, in the caller's transaction, the outbox row (asset_purges, kind upload)
// of uploads to remove: the tickets whose objects go if they are still uncommitted when the
// purge runs, and single keys (an unused image of a committed ticket). The PurgeAssets workflow
// re-checks both against the owner's scenes before deleting anything.
func (s *Service) uploadPurge(ctx context.Context, tx *ent.Tx, owner *ent.ExternalUser, integrationID string, tickets, keys []string) (*ent.AssetPurge, error) {
	if len(tickets)+len(keys) == 0 {
		return nil, nil
	}
	return tx.AssetPurge.Create().SetKind(assetpurge.KindUpload).SetIntegrationID(integrationID).
		SetOwnerID(owner.ID).SetExternalUserID(owner.ExternalUserID).
		SetTicketIds(tickets).SetKeys(keys).Save(ctx)
}
