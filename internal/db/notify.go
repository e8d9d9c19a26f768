package db

import (
	"context"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/pgnotify"
)

// NotifyScenesChanged announces changed scenes on pgnotify.ScenesChannel inside tx: Postgres
// delivers a NOTIFY only when its transaction commits, so no process reloads a row before the
// change is visible.
func NotifyScenesChanged(ctx context.Context, tx *ent.Tx, integrationID string, sceneIDs ...string) error {
	if len(sceneIDs) == 0 {
		return nil
	}
	q, args := pgnotify.ScenesChanged(integrationID, sceneIDs)
	_, err := tx.ExecContext(ctx, q, args...)
	return err
}
