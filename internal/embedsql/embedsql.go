// Package embedsql holds the embed API's SQL that is run beyond the session service: the
// visibility rule of a scene for a session, and the statement that queues a view in the Postgres
// outbox (view_outboxes), which the session service runs for every view beacon and the
// benchmark's bare server runs too, to measure against; analytics.Streamer drains the outbox
// into ClickHouse.
package embedsql

// VisibleScene is the SQL of the embed visibility rule (services/session's sees) for one scene:
// live, of the integration, and public and embeddable or owned by the session's customer ($3; ”
// for a guest, which no owner id equals).
const VisibleScene = `s.id = $1 AND s.integration_id = $2 AND s.archived_at IS NULL
	AND ((s.visibility = 'public' AND s.allow_embed) OR s.owner_id = $3)`

// InsertView queues one view in the outbox if the session may see the scene: $1 scene id, $2
// integration id, $3 the session's customer record id (empty for a guest), $4 visitor id. It
// returns the new row's id, or no row. The benchmark's bare server runs it too.
const InsertView = `INSERT INTO view_outboxes (integration_id, scene_id, visitor_id, viewed_at)
	SELECT s.integration_id, s.id, $4, now() FROM scenes s WHERE ` + VisibleScene + ` RETURNING id`
