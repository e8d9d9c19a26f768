package session

import (
	"context"
	"errors"
	"github.com/splathost/splathost/internal/metrics"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/embedsql"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
)

// maxVisitorID bounds the embed's anonymous per-browser id (a UUID is 36 characters).
const maxVisitorID = 128

// beacon is a validated view or like body: {splatId, visitorId} (splatId may come from the path).
type beacon struct {
	splatID   string
	visitorID string
}

// parseBeacon reads {splatId, visitorId}; withSplat says the body must name the scene.
func parseBeacon(body []byte, withSplat bool) (*beacon, error) {
	f, err := httpx.DecodeObject(body, !withSplat)
	if err != nil {
		return nil, err
	}
	b := &beacon{}
	if withSplat {
		f.Only("splatId", "visitorId")
		f.Require("splatId", "visitorId")
		if id, ok := f.String("splatId", 0, 1024); ok {
			if ids.Valid(id) {
				b.splatID = strings.ToLower(id)
			} else {
				f.Issuef("splatId: must be a 24-character hexadecimal scene id")
			}
		}
	} else {
		f.Only("visitorId")
		f.Require("visitorId")
	}
	if v, ok := f.String("visitorId", 1, maxVisitorID); ok {
		if strings.TrimSpace(v) == "" || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			f.Issuef("visitorId: must be printable and not blank")
		}
		b.visitorID = v
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

// ownerArg is the owner id a session may see private scenes of (” matches none).
func (ss *session) ownerArg() string {
	if ss.scoped {
		return ss.sub
	}
	return ""
}

// recordView answers POST /api/embed/views (contract item 4): 202 {status:'accepted'} once the
// view is in the Postgres outbox, in one statement that also checks the session may see the
// scene (404 otherwise, as for a read). The view reaches ClickHouse, viewCount and trending
// through analytics.Streamer, durably: an accepted view survives ClickHouse being down. A view
// beyond the session's bounds (beacons.go) answers 429 and counts nothing.
func (s *Service) recordView(c *fiber.Ctx) error {
	ss, err := sessionCaller(httpx.CallerOf(c))
	if err != nil {
		return err
	}
	b, err := parseBeacon(c.Body(), true)
	if err != nil {
		return err
	}
	if !ss.mayOpen(b.splatID) {
		return errNotFound()
	}
	if err := s.beacons.admit(c, b.visitorID, true); err != nil {
		return err
	}
	var id int64
	err = s.db.Pool.QueryRow(c.UserContext(), embedsql.InsertView, b.splatID, ss.integrationID, ss.ownerArg(), b.visitorID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotFound()
	}
	if err != nil {
		return apperr.Internal(err)
	}
	metrics.ViewsAccepted.Inc()
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"status": "accepted"})
}

// like answers POST /api/embed/splats/{id}/like with {visitorId}: one like per visitor and
// scene (a repeat changes nothing), only where the owner allows reactions (403 otherwise), on a
// scene the session may see (404 otherwise). The answer carries the scene's likeCount. A like
// of a visitor new to the session, beyond its bound (beacons.go), answers 429.
func (s *Service) like(c *fiber.Ctx) error {
	return s.react(c, likeTx, true, func(created bool, likes int64) fiber.Map {
		return fiber.Map{"status": "success", "liked": true, "created": created, "likeCount": likes}
	})
}

// unlike answers DELETE /api/embed/splats/{id}/like with {visitorId}: the visitor's like is
// withdrawn (removed says whether there was one; a repeat changes nothing), under the same
// rules as like: a scene the session may see (404 otherwise) whose owner allows reactions (403
// otherwise). The answer carries the scene's likeCount, which never goes below 0.
func (s *Service) unlike(c *fiber.Ctx) error {
	return s.react(c, unlikeTx, false, func(removed bool, likes int64) fiber.Map {
		return fiber.Map{"status": "success", "liked": false, "removed": removed, "likeCount": likes}
	})
}

// react runs a like or unlike: the session and scene of the path, the {visitorId} body, the
// change in one transaction, and the answer built from whether it changed anything. A like
// (counts) is held to the session's bound on new visitors; an unlike can only lower a count.
func (s *Service) react(c *fiber.Ctx, change func(context.Context, *ent.Tx, *session, string, string) (bool, int64, error),
	counts bool, answer func(changed bool, likes int64) fiber.Map) error {
	ss, id, err := sessionScene(c)
	if err != nil {
		return err
	}
	b, err := parseBeacon(c.Body(), false)
	if err != nil {
		return err
	}
	if counts {
		if err := s.beacons.admit(c, b.visitorID, false); err != nil {
			return err
		}
	}
	ctx := c.UserContext()
	var likes int64
	var changed bool
	err = s.db.InTx(ctx, func(tx *ent.Tx) error {
		var err error
		changed, likes, err = change(ctx, tx, ss, id, b.visitorID)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(answer(changed, likes))
}

// lockLikedScene locks the scene row a like or unlike changes, so the count and the like rows
// agree; it answers 404 for a scene the session may not see and 403 where reactions are off.
func lockLikedScene(ctx context.Context, tx *ent.Tx, ss *session, id string) (likes int64, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT s.allow_reactions, s.like_count FROM scenes s WHERE `+embedsql.VisibleScene+` FOR UPDATE`,
		id, ss.integrationID, ss.ownerArg())
	if err != nil {
		return 0, err
	}
	var allow, found bool
	for rows.Next() {
		found = true
		if err := rows.Scan(&allow, &likes); err != nil {
			rows.Close()
			return 0, err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, errNotFound()
	}
	if !allow {
		return 0, apperr.Forbidden("reactions are disabled for this scene")
	}
	return likes, nil
}

// unlikeTx removes the visitor's like under the scene's row lock. GREATEST keeps the count at 0
// even if a like row outlived a count reset (an operator's repair, say).
func unlikeTx(ctx context.Context, tx *ent.Tx, ss *session, id, visitorID string) (removed bool, likes int64, err error) {
	if likes, err = lockLikedScene(ctx, tx, ss, id); err != nil {
		return false, 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM scene_likes WHERE scene_id = $1 AND visitor_id = $2`, id, visitorID)
	if err != nil {
		return false, 0, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, likes, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE scenes SET like_count = GREATEST(like_count - 1, 0) WHERE id = $1`, id); err != nil {
		return false, 0, err
	}
	return true, max(likes-1, 0), db.NotifyScenesChanged(ctx, tx, ss.integrationID, id)
}

// likeTx records the like under the scene's row lock, so the count and the like rows agree.
func likeTx(ctx context.Context, tx *ent.Tx, ss *session, id, visitorID string) (created bool, likes int64, err error) {
	if likes, err = lockLikedScene(ctx, tx, ss, id); err != nil {
		return false, 0, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO scene_likes (integration_id, scene_id, visitor_id, created_at)
		VALUES ($1, $2, $3, now()) ON CONFLICT (scene_id, visitor_id) DO NOTHING`, ss.integrationID, id, visitorID)
	if err != nil {
		return false, 0, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, likes, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE scenes SET like_count = like_count + 1 WHERE id = $1`, id); err != nil {
		return false, 0, err
	}
	return true, likes + 1, db.NotifyScenesChanged(ctx, tx, ss.integrationID, id)
}
