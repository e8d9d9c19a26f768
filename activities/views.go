package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/scenelike"
	"github.com/splathost/splathost/ent/viewoutbox"
	"github.com/splathost/splathost/workflows/contract"
)

// ViewStore is the part of the ClickHouse view store (analytics.Views) the activities use. The
// worker wires it in; package activities names it by interface because workflows, which import
// activities, must stay clear of the analytics package (internal/arch).
type ViewStore interface {
	MarkDeleted(ctx context.Context, sceneIDs []string) error
	CompactDeleted(ctx context.Context) (int, error)
	DropPartitionsBefore(ctx context.Context, cutoff time.Time) ([]string, error)
	SceneIDs(ctx context.Context) ([]string, error)
}

// DeleteViews removes every view record of deleted scenes (spec: DELETE of a scene or a
// customer removes its view records): the views still waiting in the Postgres outbox, the likes,
// and in ClickHouse, one insert into the deleted scenes, which takes their views out of every
// query at once (the daily CompactDeletedViews removes the rows themselves, for all deleted
// scenes in one batch: no mutation per deletion). Each step is idempotent, so a retry after
// any failure is safe. A view stored after the insert is left out too.
func (a *Activities) DeleteViews(ctx context.Context, in contract.DeleteViewsInput) (contract.DeleteViewsResult, error) {
	if len(in.SceneIDs) == 0 || len(in.SceneIDs) > contract.MaxViewDeletion {
		return contract.DeleteViewsResult{}, badInput("DeleteViews: 1-%d scene ids are required", contract.MaxViewDeletion)
	}
	return contract.DeleteViewsResult{}, a.deleteViews(ctx, in.SceneIDs)
}

func (a *Activities) deleteViews(ctx context.Context, sceneIDs []string) error {
	if a.Views == nil {
		return fmt.Errorf("deleting views: no view store configured")
	}
	if _, err := a.Ent.ViewOutbox.Delete().Where(viewoutbox.SceneIDIn(sceneIDs...)).Exec(ctx); err != nil {
		return fmt.Errorf("deleting queued views: %w", err)
	}
	if _, err := a.Ent.SceneLike.Delete().Where(scenelike.SceneIDIn(sceneIDs...)).Exec(ctx); err != nil {
		return fmt.Errorf("deleting likes: %w", err)
	}
	return a.Views.MarkDeleted(ctx, sceneIDs)
}

// CompactDeletedViews removes the ClickHouse rows of every deleted scene that still has any,
// one mutation per table for all of them (the view-retention schedule runs it daily).
func (a *Activities) CompactDeletedViews(ctx context.Context, _ contract.CompactDeletedViewsInput) (contract.CompactDeletedViewsResult, error) {
	if a.Views == nil {
		return contract.CompactDeletedViewsResult{}, fmt.Errorf("compacting views: no view store configured")
	}
	n, err := a.Views.CompactDeleted(ctx)
	return contract.CompactDeletedViewsResult{Scenes: n}, err
}

// DropExpiredViews drops the view partitions older than the retention (idempotent: a partition
// already gone is not listed again).
func (a *Activities) DropExpiredViews(ctx context.Context, in contract.DropExpiredViewsInput) (contract.DropExpiredViewsResult, error) {
	if in.Before.IsZero() {
		return contract.DropExpiredViewsResult{}, badInput("DropExpiredViews: a cutoff is required")
	}
	if a.Views == nil {
		return contract.DropExpiredViewsResult{}, fmt.Errorf("dropping view partitions: no view store configured")
	}
	dropped, err := a.Views.DropPartitionsBefore(ctx, in.Before)
	return contract.DropExpiredViewsResult{Dropped: dropped}, err
}

// orphanCheckChunk is how many scene ids one Postgres existence check takes.
const orphanCheckChunk = 1000

// DeleteOrphanViews removes the view records of scenes that no longer exist in Postgres (marks
// them deleted, as DeleteViews does): the backstop for a deletion whose DeleteSceneViews
// workflow could not be started (Temporal unreachable at that moment). A scene never comes back
// once deleted, so the sweep cannot remove live data.
func (a *Activities) DeleteOrphanViews(ctx context.Context, _ contract.DeleteOrphanViewsInput) (contract.DeleteOrphanViewsResult, error) {
	if a.Views == nil {
		return contract.DeleteOrphanViewsResult{}, fmt.Errorf("sweeping views: no view store configured")
	}
	ids, err := a.Views.SceneIDs(ctx)
	if err != nil {
		return contract.DeleteOrphanViewsResult{}, err
	}
	var orphans []string
	for start := 0; start < len(ids); start += orphanCheckChunk {
		chunk := ids[start:min(start+orphanCheckChunk, len(ids))]
		live, err := a.Ent.Scene.Query().Where(scene.IDIn(chunk...)).IDs(ctx)
		if err != nil {
			return contract.DeleteOrphanViewsResult{}, err
		}
		exists := make(map[string]bool, len(live))
		for _, id := range live {
			exists[id] = true
		}
		for _, id := range chunk {
			if !exists[id] {
				orphans = append(orphans, id)
			}
		}
		activity.RecordHeartbeat(ctx, start)
	}
	for start := 0; start < len(orphans); start += contract.MaxViewDeletion {
		if err := a.deleteViews(ctx, orphans[start:min(start+contract.MaxViewDeletion, len(orphans))]); err != nil {
			return contract.DeleteOrphanViewsResult{}, err
		}
		activity.RecordHeartbeat(ctx, start)
	}
	return contract.DeleteOrphanViewsResult{Scenes: len(orphans)}, nil
}
