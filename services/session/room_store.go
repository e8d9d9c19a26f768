package session

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/roomproto"
)

// RoomChannel is the Postgres NOTIFY channel every room event travels on, between every
// session service process (docs/embeds.md, "Multiplayer room": why LISTEN/NOTIFY).
const RoomChannel = roomproto.Channel

// Presence timing: each process refreshes its participants' rows every presenceEvery; a row not
// refreshed for presenceStale belongs to a process that died, and is ignored and swept.
const (
	presenceEvery = 5 * time.Second
	presenceStale = 15 * time.Second
	// notifyInline is the largest NOTIFY payload sent as is (Postgres refuses 8000 bytes and
	// more); a larger event goes through a room_messages row whose id is notified.
	notifyInline = 7000
	// messageKeep is how long a room_messages row is kept: every listener has read it long
	// before.
	messageKeep = time.Minute
	// draftKeep is how long the draft of a room nobody is in survives (its participants' process
	// died and none came back): a voluntary last leave deletes it at once.
	draftKeep = 10 * time.Minute
)

// roomEvent is a NOTIFY payload: the frame msg for the local participants of room. Echo is
// the participant who caused it, who does not get it back; Seq is the draft's seq after an edit
// or a save; Join is the participant a join announces. Saved is the scene whose save the scene
// service announced (roomproto.SceneSaved): each process reads the stored scene and makes msg
// itself. Evict closes a participant whose seat was given away. Ref replaces everything else when the event is in a room_messages row.
type roomEvent struct {
	Room  string          `json:"room,omitempty"`
	Echo  string          `json:"echo,omitempty"`
	Seq   int64           `json:"seq,omitempty"`
	Join  string          `json:"join,omitempty"`
	Saved string          `json:"saved,omitempty"`
	Msg   json.RawMessage `json:"msg,omitempty"`
	Ref   int64           `json:"ref,omitempty"`
	// Evict is the participant whose seat an editor took (evictGuest): its process closes it.
	Evict string `json:"evict,omitempty"`
}

// errDraftTooLarge refuses an edit that would grow the draft past roomMaxDraft.
var errDraftTooLarge = apperr.New(413, "this edit would make the room's draft larger than "+strconv.Itoa(roomMaxDraft>>10)+" KiB")

// errRoomFull is the refusal of the participant after roomproto.Capacity.
var errRoomFull = apperr.Conflict("the room is full: "+strconv.Itoa(roomproto.Capacity)+" participants").With("code", "ROOM_FULL")

// errTooManySockets refuses a session's or visitor's socket after roomproto.PerHolder (4429).
var errTooManySockets = apperr.New(http.StatusTooManyRequests, "this session (or its customer) already has "+
	strconv.Itoa(roomproto.PerHolder)+" room connections open: close one first").With("code", "TOO_MANY_SOCKETS")

// CloseEvicted is the close code of a guest whose seat the full room gave to a participant with
// an editor's seat (the scene's owner, or its coEdit session); the error frame says SEAT_TAKEN.
const CloseEvicted = 4001

// evictedMessage is the error frame's and the close's text for CloseEvicted.
const evictedMessage = "the room is full and an editor of the scene took this guest's seat: rejoin when a seat is free"

// roomStore is the room's Postgres side: the roster (room_presences), the draft (room_drafts)
// and the fan-out (NOTIFY on RoomChannel, room_messages for large events). Every change and its
// NOTIFY commit together, so a listener never hears of a change it cannot read yet.
type roomStore struct {
	pool *pgxpool.Pool
	// process names this process's rows.
	process string
}

// staleSecs is presenceStale for SQL (make_interval).
var staleSecs = presenceStale.Seconds()

// sqlLeaves announces every deleted presence row of the CTE gone as a leave.
const sqlLeaves = `SELECT pg_notify('` + RoomChannel + `', json_build_object('room', room_key,
	'msg', json_build_object('type', 'leave', 'id', id))::text) FROM gone`

// lockRoom serialises joins and leaves of one room across processes (capacity, guest numbers,
// the last leave's draft deletion), for the transaction's duration.
func lockRoom(ctx context.Context, tx pgx.Tx, room string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "splathost_room:"+room)
	return err
}

// notify sends ev on RoomChannel inside tx.
func notify(ctx context.Context, tx pgx.Tx, ev roomEvent) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if len(payload) > notifyInline {
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO room_messages (payload, created_at) VALUES ($1, now()) RETURNING id`,
			string(payload)).Scan(&id); err != nil {
			return err
		}
		payload, _ = json.Marshal(roomEvent{Ref: id})
	}
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, RoomChannel, string(payload))
	return err
}

// inTx runs fn in a transaction and commits it when fn succeeds.
func (s *roomStore) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// joined is what a participant learns when admitted.
type joined struct {
	self  Peer
	peers []Peer
	draft json.RawMessage
	seq   int64
}

// join admits participant id to the room of adm: stale rows of the room are swept first (with
// their leaves), then the holder's sockets are counted (errTooManySockets past
// roomproto.PerHolder) and the capacity checked: a full room refuses a guest (errRoomFull) and
// seats a participant with an editor's seat by evicting the newest guest (its leave announced,
// its socket closed with CloseEvicted). Then the guest number and colour are chosen, the row
// written and the join announced, and the roster and the draft read, all in one transaction
// under the holder's lock, then the room's (always in that order: no two joins wait on each
// other's).
func (s *roomStore) join(ctx context.Context, id string, adm *admission) (*joined, error) {
	room := adm.room
	var out *joined
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.seatHolder(ctx, tx, adm.holder); err != nil {
			return err
		}
		if err := lockRoom(ctx, tx, room); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM room_presences WHERE room_key = $1
			AND last_seen < now() - make_interval(secs => $2) RETURNING room_key, id) `+sqlLeaves, room, staleSecs); err != nil {
			return err
		}
		peers, guests, colours, err := roster(ctx, tx, room)
		if err != nil {
			return err
		}
		if len(peers) >= roomproto.Capacity {
			if peers, err = evictGuest(ctx, tx, room, peers, adm.rights.canEdit); err != nil {
				return err
			}
		}
		self := Peer{ID: id, Name: adm.name, AvatarURL: adm.avatar, Colour: pickColour(colours, id), Guest: adm.name == ""}
		number := 0
		if self.Guest {
			number = lowestFree(guests)
			self.Name = guestName(number)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO room_presences (id, room_key, process_id, name, avatar_url, colour, guest,
			guest_number, holder, can_edit, joined_at, last_seen) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, clock_timestamp(), now())`,
			self.ID, room, s.process, self.Name, self.AvatarURL, self.Colour, self.Guest, number, adm.holder, adm.rights.canEdit); err != nil {
			return err
		}
		msg, _ := json.Marshal(joinMsg{Type: "join", Peer: self})
		if err := notify(ctx, tx, roomEvent{Room: room, Join: self.ID, Echo: self.ID, Msg: msg}); err != nil {
			return err
		}
		out = &joined{self: self, draft: json.RawMessage(`{}`)}
		for _, p := range peers {
			out.peers = append(out.peers, p.Peer)
		}
		out.peers = append(out.peers, self)
		var draft string
		err = tx.QueryRow(ctx, `SELECT fields::text, seq FROM room_drafts WHERE id = $1`, room).Scan(&draft, &out.seq)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			out.draft = json.RawMessage(draft)
		}
		return nil
	})
	return out, err
}

// seatHolder takes the holder's lock for the transaction and refuses its socket past
// roomproto.PerHolder live ones, in any room of any process ("" holds nothing: no bound).
func (s *roomStore) seatHolder(ctx context.Context, tx pgx.Tx, holder string) error {
	if holder == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "splathost_room_holder:"+holder); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM room_presences WHERE holder = $1
		AND last_seen >= now() - make_interval(secs => $2)`, holder, staleSecs).Scan(&n); err != nil {
		return err
	}
	if n >= roomproto.PerHolder {
		return errTooManySockets
	}
	return nil
}

// newestGuest is the index of the last participant in join order without an editor's seat, or
// -1 when every participant holds one.
func newestGuest(peers []seated) int {
	for i := len(peers) - 1; i >= 0; i-- {
		if !peers[i].canEdit {
			return i
		}
	}
	return -1
}

// seated is a roster row: the peer and whether it holds an editor's seat.
type seated struct {
	Peer
	canEdit bool
}

// roster reads the room's participants in join order, with the guest numbers and colours they
// hold.
func roster(ctx context.Context, tx pgx.Tx, room string) ([]seated, map[int]bool, map[string]bool, error) {
	rows, err := tx.Query(ctx, `SELECT id, name, avatar_url, colour, guest, guest_number, can_edit FROM room_presences
		WHERE room_key = $1 ORDER BY joined_at, id`, room)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rows.Close()
	var peers []seated
	guests, colours := map[int]bool{}, map[string]bool{}
	for rows.Next() {
		var p seated
		var n int
		if err := rows.Scan(&p.ID, &p.Name, &p.AvatarURL, &p.Colour, &p.Guest, &n, &p.canEdit); err != nil {
			return nil, nil, nil, err
		}
		peers = append(peers, p)
		colours[p.Colour] = true
		if p.Guest {
			guests[n] = true
		}
	}
	return peers, guests, colours, rows.Err()
}

// evictGuest makes a seat in the full room for a participant with an editor's seat (canEdit):
// the newest participant without one is told by an evict event, which closes its socket wherever
// it is, and loses its row (its leave announced). A guest, or a room of editors only, gets
// errRoomFull. It returns the roster without the evicted participant.
func evictGuest(ctx context.Context, tx pgx.Tx, room string, peers []seated, canEdit bool) ([]seated, error) {
	victim := -1
	if canEdit {
		victim = newestGuest(peers)
	}
	if victim < 0 {
		return nil, errRoomFull
	}
	id := peers[victim].ID
	// The evict goes out first: its socket is closing when its own leave arrives, and gets none.
	if err := notify(ctx, tx, roomEvent{Room: room, Evict: id}); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM room_presences WHERE id = $1 RETURNING room_key, id) `+sqlLeaves, id); err != nil {
		return nil, err
	}
	return slices.Delete(peers, victim, victim+1), nil
}

// edit merges fields into the room's draft (last writer wins per top-level field, levelData
// per top-level levelData key, all inside Postgres so concurrent edits from other processes
// never overwrite each other's fields) and announces the edit with the draft's new seq. The
// merge happens only while the scene is still one rt opens (live, of the integration, public and
// embeddable or the session's customer's own), checked in the same statement: otherwise nothing
// changes and the edit is refused (errSceneGone).
func (s *roomStore) edit(ctx context.Context, room, from string, fields json.RawMessage, rt *rights) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var seq, size int64
		err := tx.QueryRow(ctx, `INSERT INTO room_drafts AS d (id, fields, seq, updated_at)
			SELECT $1::text, $2::jsonb, 1, now() WHERE EXISTS (SELECT 1 FROM scenes s WHERE s.id = $3::text AND s.integration_id = $4::text
				AND s.archived_at IS NULL AND (s.owner_id = $5::text OR (s.visibility = 'public' AND s.allow_embed)))
			ON CONFLICT (id) DO UPDATE SET
				fields = d.fields || (EXCLUDED.fields - 'levelData') || CASE WHEN EXCLUDED.fields ? 'levelData'
					THEN jsonb_build_object('levelData', COALESCE(d.fields->'levelData', '{}'::jsonb) || (EXCLUDED.fields->'levelData'))
					ELSE '{}'::jsonb END,
				seq = d.seq + 1, updated_at = now()
			RETURNING seq, octet_length(fields::text)`, room, string(fields), rt.sceneID, rt.integrationID, rt.sub).Scan(&seq, &size)
		if errors.Is(err, pgx.ErrNoRows) {
			return errSceneGone
		}
		if err != nil {
			return err
		}
		if size > roomMaxDraft {
			return errDraftTooLarge
		}
		msg, _ := json.Marshal(editMsg{Type: "edit", From: from, Fields: fields, Seq: seq})
		return notify(ctx, tx, roomEvent{Room: room, Echo: from, Seq: seq, Msg: msg})
	})
}

// camera announces a participant's camera; it changes nothing stored.
func (s *roomStore) camera(ctx context.Context, room, from string, cam *Camera) error {
	msg, _ := json.Marshal(cameraMsg{Type: "camera", From: from, Camera: cam})
	return s.inTx(ctx, func(tx pgx.Tx) error { return notify(ctx, tx, roomEvent{Room: room, Echo: from, Msg: msg}) })
}

// leave removes participant id from room and announces it. voluntary says the client closed
// the connection itself: if nobody else is left, the room's draft goes too (closing an editor
// drops its unsaved changes). A participant cut off by a shutdown or a failure keeps the draft
// for its reconnect.
func (s *roomStore) leave(ctx context.Context, room, id string, voluntary bool) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockRoom(ctx, tx, room); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM room_presences WHERE id = $1 RETURNING room_key, id) `+sqlLeaves, id); err != nil {
			return err
		}
		if !voluntary {
			return nil
		}
		_, err := tx.Exec(ctx, `DELETE FROM room_drafts WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM room_presences
			WHERE room_key = $1 AND last_seen >= now() - make_interval(secs => $2))`, room, staleSecs)
		return err
	})
}

// heartbeat refreshes this process's rows and returns the ids it still has: a participant
// whose row is gone was swept while this process could not reach Postgres.
func (s *roomStore) heartbeat(ctx context.Context) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `UPDATE room_presences SET last_seen = now() WHERE process_id = $1 RETURNING id`, s.process)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// sweep deletes what dead processes left: stale presence rows (each announced as a leave),
// read room_messages rows, and drafts of rooms nobody has been in for draftKeep.
func (s *roomStore) sweep(ctx context.Context) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM room_presences
			WHERE last_seen < now() - make_interval(secs => $1) RETURNING room_key, id) `+sqlLeaves, staleSecs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM room_messages WHERE created_at < now() - make_interval(secs => $1)`,
			messageKeep.Seconds()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM room_drafts d WHERE updated_at < now() - make_interval(secs => $1)
			AND NOT EXISTS (SELECT 1 FROM room_presences p WHERE p.room_key = d.id)`, draftKeep.Seconds())
		return err
	})
}

// leaveAll removes every row of this process, announcing each leave (shutdown).
func (s *roomStore) leaveAll(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `WITH gone AS (DELETE FROM room_presences WHERE process_id = $1 RETURNING room_key, id) `+sqlLeaves, s.process)
	return err
}

// message reads the event of a room_messages row.
func (s *roomStore) message(ctx context.Context, id int64) (string, error) {
	var payload string
	err := s.pool.QueryRow(ctx, `SELECT payload FROM room_messages WHERE id = $1`, id).Scan(&payload)
	return payload, err
}
