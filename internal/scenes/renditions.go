package scenes

import (
	"context"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/predicate"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

// RetryFolder is the rendition rule of a retry: only an upload with a rendition format (.ply,
// .splat, .ksplat) gets one, and a .sog or LOD folder without image its poster (409 otherwise),
// built again into the folder its scene already names, or the scene's own rendition folder when
// it never had one.
func RetryFolder(cur *ent.Scene) (string, error) {
	if !contract.Processed(string(cur.SplatType), cur.SplatURL, cur.ImageURL != "") {
		return "", apperr.Conflict("this scene's upload has no rendition (only .ply, .splat and .ksplat files get one, and .sog files and LOD folders without image a poster)")
	}
	if cur.RenditionPrefix != nil {
		return *cur.RenditionPrefix, nil
	}
	return objectkeys.RenditionFolder(cur.IntegrationID, cur.OwnerID, cur.ID), nil
}

// RetryRendition makes scene id's rendition pending again and not yet started, on the
// deployment's queue (Store.Rendition), under
// its row lock (RetryFolder decides whether and where); the media worker's dispatcher starts
// it. Any scene row counts, archived ones too; the owner edge is loaded. updatedAt is kept: a
// rendition is not an edit of the scene.
func (s *Store) RetryRendition(ctx context.Context, id string) (*ent.Scene, error) {
	var sc *ent.Scene
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		return lockScene(ctx, tx, []predicate.Scene{scene.ID(id)}, func(q *ent.SceneQuery) { q.WithOwner() }, func(cur *ent.Scene) error {
			folder, err := RetryFolder(cur)
			if err != nil {
				return err
			}
			if err := tx.Scene.UpdateOne(cur).SetUpdatedAt(cur.UpdatedAt).SetProcessingState(scene.ProcessingStatePending).
				ClearProcessingMessage().SetRenditionPrefix(folder).
				SetRenditionQueue(s.Rendition.Queue).ClearRenditionStartedAt().Exec(ctx); err != nil {
				return err
			}
			cur.ProcessingState, cur.ProcessingMessage, cur.RenditionPrefix = scene.ProcessingStatePending, nil, &folder
			sc = cur
			return db.NotifyScenesChanged(ctx, tx, cur.IntegrationID, cur.ID)
		})
	})
	return sc, err
}
