package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/predicate"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

// PurgeArchivedScene permanently removes an archived scene whose retention ran out: its row,
// its view records and its stored objects. Everything happens under the scene's row lock in
// one transaction, and the stored objects go before the row: a failed or interrupted attempt
// rolls back and leaves the row for the retry (deleting objects already gone is success), so
// no attempt can drop the row and then lose track of its objects. A restore or protection
// racing the removal waits on the lock and then finds the scene gone, or wins and the removal
// finds it no longer eligible. Archived scenes hold no storage or scene counters, so there is
// nothing to release, and only the scene row is locked (the first lock of the scene →
// customer → account order).
func (a *Activities) PurgeArchivedScene(ctx context.Context, in contract.PurgeArchivedSceneInput) (contract.PurgeArchivedSceneResult, error) {
	if in.SceneID == "" || in.IntegrationID == "" || in.ArchivedAt.IsZero() {
		return contract.PurgeArchivedSceneResult{}, badInput("PurgeArchivedScene: scene id, integration id and archived at are required")
	}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return contract.PurgeArchivedSceneResult{}, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	sc, err := tx.Scene.Query().Where(scene.ID(in.SceneID), scene.IntegrationID(in.IntegrationID)).ForUpdate().Only(ctx)
	if ent.IsNotFound(err) {
		return contract.PurgeArchivedSceneResult{Reason: contract.RetentionKeptGone}, nil
	}
	if err != nil {
		return contract.PurgeArchivedSceneResult{}, fmt.Errorf("locking scene %s: %w", in.SceneID, err)
	}
	switch {
	case sc.ArchivedAt == nil:
		return contract.PurgeArchivedSceneResult{Reason: contract.RetentionKeptRestored}, nil
	case sc.ArchivedAt.UnixMicro() != in.ArchivedAt.UnixMicro():
		return contract.PurgeArchivedSceneResult{Reason: contract.RetentionKeptRearchive}, nil
	case sc.ArchiveProtected:
		return contract.PurgeArchivedSceneResult{Reason: contract.RetentionKeptProtected}, nil
	}
	keys, prefixes := objectkeys.SceneObjects(sc.IntegrationID, sc.AssetKeys, sc.LodFolderKey, sc.RenditionPrefix)
	if len(keys)+len(prefixes) > 0 {
		if _, err := a.DeleteObjects(ctx, contract.DeleteObjectsInput{Keys: keys, Prefixes: prefixes}); err != nil {
			return contract.PurgeArchivedSceneResult{}, err
		}
	}
	if err := a.deleteViews(ctx, []string{sc.ID}); err != nil {
		return contract.PurgeArchivedSceneResult{}, err
	}
	var hooks events.Batch
	if err := a.Events.Emit(ctx, tx, &hooks, sc.IntegrationID, events.RetentionPurged, func() (any, error) {
		eu, err := tx.Scene.QueryOwner(sc).Select(externaluser.FieldExternalUserID).String(ctx)
		return events.SceneRef{SplatID: sc.ID, ExternalUserID: eu}, err
	}); err != nil {
		return contract.PurgeArchivedSceneResult{}, err
	}
	if err := tx.Scene.DeleteOneID(sc.ID).Exec(ctx); err != nil {
		return contract.PurgeArchivedSceneResult{}, fmt.Errorf("deleting scene %s: %w", sc.ID, err)
	}
	if err := db.NotifyScenesChanged(ctx, tx, sc.IntegrationID, sc.ID); err != nil {
		return contract.PurgeArchivedSceneResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return contract.PurgeArchivedSceneResult{}, fmt.Errorf("committing the removal of scene %s: %w", sc.ID, err)
	}
	a.Events.Flush(ctx, &hooks)
	return contract.PurgeArchivedSceneResult{Removed: true}, nil
}

// ArchivedScenes lists unprotected archived scenes for the retention re-drive, a bounded page
// at a time.
func (a *Activities) ArchivedScenes(ctx context.Context, in contract.ArchivedScenesInput) (contract.ArchivedScenesResult, error) {
	if in.Limit <= 0 || in.MinAge < 0 {
		return contract.ArchivedScenesResult{}, badInput("ArchivedScenes: limit > 0 and min age >= 0 are required")
	}
	where := []predicate.Scene{scene.ArchivedAtNotNil(), scene.ArchiveProtected(false),
		scene.ArchivedAtLT(time.Now().Add(-in.MinAge))}
	if !in.AfterArchivedAt.IsZero() {
		where = append(where, scene.Or(scene.ArchivedAtGT(in.AfterArchivedAt),
			scene.And(scene.ArchivedAt(in.AfterArchivedAt), scene.IDGT(in.AfterID))))
	}
	rows, err := a.Ent.Scene.Query().Where(where...).
		Order(ent.Asc(scene.FieldArchivedAt), ent.Asc(scene.FieldID)).Limit(in.Limit).
		Select(scene.FieldID, scene.FieldIntegrationID, scene.FieldOwnerID, scene.FieldArchivedAt).
		WithOwner(func(q *ent.ExternalUserQuery) { q.Select(externaluser.FieldID, externaluser.FieldExternalUserID) }).
		All(ctx)
	if err != nil {
		return contract.ArchivedScenesResult{}, err
	}
	out := contract.ArchivedScenesResult{Scenes: make([]contract.ArchivedScene, 0, len(rows)), Last: len(rows) < in.Limit}
	for _, r := range rows {
		s := contract.ArchivedScene{SceneID: r.ID, IntegrationID: r.IntegrationID, OwnerID: r.OwnerID, ArchivedAt: *r.ArchivedAt}
		if r.Edges.Owner != nil {
			s.ExternalUserID = r.Edges.Owner.ExternalUserID
		}
		out.Scenes = append(out.Scenes, s)
	}
	return out, nil
}
