// Package pgnotify holds the scene change notice: the Postgres NOTIFY channel the scene caches
// listen on and the statement that announces on it. It imports neither ent nor a driver, so a
// writer on an ent transaction (internal/db.NotifyScenesChanged) and one on plain pgx (the view
// streamer in analytics, which must not depend on ent) announce the same way.
package pgnotify

// ScenesChannel is the Postgres NOTIFY channel every change to a scene row is announced on, with
// the payload "<integrationId>:<sceneId>", so each process's scene cache drops what changed.
// Every writer of the scenes table must announce (the scene service, the customer cascade, the
// billing lifecycle, the view streamer); a change made without it stays invisible to cached
// readers.
const ScenesChannel = "splathost_scenes"

// scenesChanged sends one notice per scene id: $1 the channel, $2 the integration, $3 the ids.
const scenesChanged = `SELECT pg_notify($1, $2::text || ':' || id) FROM unnest($3::text[]) AS id`

// ScenesChanged is the statement, and its arguments, that announces the integration's changed
// scenes. Run it inside the transaction that changed them: Postgres delivers a NOTIFY only when
// its transaction commits, so no process reloads a row before the change is visible.
func ScenesChanged(integrationID string, sceneIDs []string) (query string, args []any) {
	return scenesChanged, []any{ScenesChannel, integrationID, sceneIDs}
}
