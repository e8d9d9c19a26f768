package db

import (
	"context"

	"github.com/splathost/splathost/ent"
)

// ScenesChannel is the Postgres NOTIFY channel every change to a scene row is announced on, with
// the payload "<integrationId>:<sceneId>", so each process's scene cache drops what changed.
// Every writer of the scenes table must announce (the scene service, the customer cascade, the
// billing lifecycle); a change made without it stays invisible to cached readers.
const ScenesChannel = "splathost_scenes"

// NotifyScenesChanged announces changed scenes inside tx: Postgres delivers a NOTIFY only when
// its transaction commits, so no process reloads a row before the change is visible.
func NotifyScenesChanged(ctx context.Context, tx *ent.Tx, integrationID string, sceneIDs ...string) error {
	if len(sceneIDs) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2::text || ':' || id) FROM unnest($3::text[]) AS id`,
		ScenesChannel, integrationID, sceneIDs)
	return err
}
