package session

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/roomproto"
)

// roomConn is one participant's WebSocket. An idle participant costs its reader (the
// connection's own goroutine) and its buffers, nothing more: frames queue in a slice, written by
// a goroutine that exists only while there is something to write, and pings come from the
// rooms' one ticker. That is what lets one session process hold many rooms.
type roomConn struct {
	rooms *Rooms
	ws    *websocket.Conn
	room  string
	id    string
	// rights are what the participant may do, as admitted; checked again as it goes (room_rights.go).
	rights rights

	mu sync.Mutex
	// ready says the welcome went out; until then events wait in pending.
	ready    bool
	pending  []*roomEvent
	joinedAt time.Time
	// queue are the frames to write; writing says a writer goroutine is draining it; writers
	// counts it for finish.
	queue   [][]byte
	writing bool
	writers sync.WaitGroup
	// closing says the close is queued (closeAt, written after the queue): nothing is queued
	// after it, and the reader only drains until the client's close. done says the connection
	// is over: nothing more is written.
	closing, done bool
	closeAt       *closeItem

	// tokens and last are the rate limit's bucket (the reader's alone).
	tokens float64
	last   time.Time
}

// closeItem is the queue's marker of the close: an error frame and a close control frame.
type closeItem struct {
	frame  []byte
	code   int
	reason string
}

// welcome sends the welcome, then the events that arrived while joining and are not already in
// it: edits and saves after the draft's seq, joins of participants the roster did not list.
func (c *roomConn) welcome(j *joined) {
	msg, _ := json.Marshal(welcomeMsg{Type: "welcome", Self: j.self, Peers: j.peers, Draft: j.draft, Seq: j.seq, CanEdit: c.rights.canEdit})
	listed := make(map[string]bool, len(j.peers))
	for _, p := range j.peers {
		listed[p.ID] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sendLocked(msg)
	for _, ev := range c.pending {
		if (ev.Seq != 0 && ev.Seq <= j.seq) || (ev.Join != "" && listed[ev.Join]) {
			continue
		}
		c.sendLocked(ev.Msg)
	}
	c.pending, c.ready, c.joinedAt = nil, true, time.Now()
}

// joinedBefore reports whether c's welcome went out before t.
func (c *roomConn) joinedBefore(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready && c.joinedAt.Before(t)
}

// deliver queues an event of c's room, unless c caused it.
func (c *roomConn) deliver(ev *roomEvent) {
	if ev.Echo == c.id {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		if len(c.pending) < roomPending {
			c.pending = append(c.pending, ev)
		} else {
			c.closeLocked(httpx.CloseServiceRestart, "RESYNC", "too many events while joining: reconnect")
		}
		return
	}
	c.sendLocked(ev.Msg)
}

// send queues a frame.
func (c *roomConn) send(frame []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sendLocked(frame)
}

// sendLocked queues a frame without blocking and makes sure a writer runs; a client too slow
// to take roomQueue frames is closed (1008). c.mu is held.
func (c *roomConn) sendLocked(frame []byte) {
	if c.closing || c.done {
		return
	}
	if len(c.queue) >= roomQueue {
		c.closeLocked(httpx.ClosePolicy, "TOO_SLOW", "this client does not read the room's messages fast enough")
		return
	}
	c.queue = append(c.queue, frame)
	c.startWriter()
}

// closeWith queues an error frame and a close with code, once; frames already queued go first.
func (c *roomConn) closeWith(code int, errCode, message string) {
	c.closeFrame(code, httpx.ErrorFrame(errCode, message), message)
}

// closeFrame queues frame and a close with code and reason, once.
func (c *roomConn) closeFrame(code int, frame []byte, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeAtLocked(code, frame, reason)
}

func (c *roomConn) closeLocked(code int, errCode, message string) {
	c.closeAtLocked(code, httpx.ErrorFrame(errCode, message), message)
}

func (c *roomConn) closeAtLocked(code int, frame []byte, reason string) {
	if c.closing || c.done {
		return
	}
	c.closing = true
	c.closeAt = &closeItem{frame: frame, code: code, reason: reason}
	c.startWriter()
}

// startWriter starts the writer goroutine unless one runs; c.mu is held.
func (c *roomConn) startWriter() {
	if c.writing || c.done {
		return
	}
	c.writing = true
	c.writers.Add(1)
	go c.write()
}

// write drains the queue, then the close if one is queued, and exits when there is nothing
// left. A failed write ends the connection: the reader is woken by an expired deadline.
func (c *roomConn) write() {
	defer c.writers.Done()
	for {
		c.mu.Lock()
		frames, closeAt := c.queue, c.closeAt
		c.queue = nil
		if len(frames) == 0 && closeAt == nil || c.done {
			c.writing = false
			c.mu.Unlock()
			return
		}
		if len(frames) == 0 {
			c.closeAt, c.done = nil, true
		}
		c.mu.Unlock()
		for _, frame := range frames {
			_ = c.ws.SetWriteDeadline(time.Now().Add(roomWriteWait))
			if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
				c.mu.Lock()
				c.done, c.writing, c.queue, c.closeAt = true, false, nil, nil
				c.mu.Unlock()
				_ = c.ws.SetReadDeadline(time.Now())
				return
			}
		}
		if len(frames) == 0 && closeAt != nil {
			deadline := time.Now().Add(2 * time.Second)
			_ = c.ws.SetWriteDeadline(deadline)
			_ = c.ws.WriteMessage(websocket.TextMessage, closeAt.frame)
			_ = c.ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(closeAt.code, httpx.CloseReason(closeAt.reason)), deadline)
			// The reader now only drains until the client's close arrives (or this deadline):
			// dropping the connection with its frames unread would reset it, which can discard
			// the close before the client reads it.
			_ = c.ws.SetReadDeadline(deadline)
			c.mu.Lock()
			c.writing = false
			c.mu.Unlock()
			return
		}
	}
}

// finish ends the connection once the reader has: no more writes, the writer (if one runs)
// unblocked and waited for, so nothing touches the connection after its handler returns.
func (c *roomConn) finish() {
	c.mu.Lock()
	c.done, c.queue, c.closeAt = true, nil, nil
	c.mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now())
	c.writers.Wait()
	_ = c.ws.Close()
}

// closeFailed closes c for a failed message or ended rights: err's error frame (its issues
// included) and code (httpx.CloseCode; 1009 for what is too large).
func (c *roomConn) closeFailed(err error) {
	e := apperr.From(err)
	if e.Status >= 500 {
		c.rooms.log.Error("room message failed", "error", err)
	}
	code := httpx.CloseCode(e)
	if errors.Is(err, errDraftTooLarge) || errors.Is(err, errMessageTooLarge) {
		code = httpx.CloseTooBig
	}
	c.closeFrame(code, errorFrame(e), e.Message)
}

// isClosing reports whether the close is queued or the connection is over.
func (c *roomConn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing || c.done
}

// read handles the client's messages until the connection ends. It reports whether the client
// itself closed it (a voluntary leave). A message is read up to roomproto.MaxMessage and one byte
// more: a larger one gets an error frame and 1009, and what is left of it is discarded while the
// close goes out (the writer bounds that drain with its deadline), so no message is ever held
// whole beyond the bound.
func (c *roomConn) read() bool {
	_ = c.ws.SetReadDeadline(time.Now().Add(roomReadIdle))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(roomReadIdle)) })
	for {
		kind, r, err := c.ws.NextReader()
		if err != nil {
			return c.ended(err)
		}
		frame, err := io.ReadAll(io.LimitReader(r, roomproto.MaxMessage+1))
		if err != nil {
			return c.ended(err)
		}
		if c.isClosing() {
			continue // draining until the client's close
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(roomReadIdle))
		if len(frame) > roomproto.MaxMessage {
			c.closeFailed(errMessageTooLarge)
			continue
		}
		if err := c.handle(kind, frame); err != nil {
			c.closeFailed(err)
		}
	}
}

// ended sorts out how the connection ended.
func (c *roomConn) ended(err error) bool {
	if c.isClosing() {
		return false
	}
	var ce *websocket.CloseError
	return errors.As(err, &ce) && (ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseGoingAway)
}

// handle applies one client message.
func (c *roomConn) handle(kind int, frame []byte) error {
	if !c.allow() {
		return apperr.New(http.StatusTooManyRequests, "more than 30 messages a second: slow down").With("code", "RATE_LIMITED")
	}
	if kind != websocket.TextMessage {
		return apperr.Invalid("malformed message", "message: must be a JSON text frame")
	}
	in, err := parseInbound(frame)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), roomStoreWait)
	defer cancel()
	switch in.kind {
	case kindPing:
		c.send(pongFrame)
		return nil
	case kindServerOnly:
		// A client never says what the server decides (a save, a welcome): refused, not relayed.
		c.send(errorFrame(withIssues(errServerOnly, "type: '"+in.typ+"' is sent only by the server")))
		return nil
	case kindEdit:
		if !c.rights.canEdit {
			c.send(errorFrame(errReadOnly))
			return nil
		}
		if err = c.rooms.check(ctx, &c.rights, time.Now(), nil); err == nil {
			err = c.rooms.store.edit(ctx, c.room, c.id, in.fields, &c.rights)
		}
	case kindCamera:
		if err = c.rooms.check(ctx, &c.rights, time.Now(), nil); err == nil {
			err = c.rooms.store.camera(ctx, c.room, c.id, in.camera)
		}
	}
	var e *apperr.Error
	if err != nil && !errors.As(err, &e) {
		err = apperr.Internal(err)
	}
	return err
}

// allow takes a token from the connection's bucket (roomproto.Rate a second, roomproto.Burst at most).
func (c *roomConn) allow() bool {
	now := time.Now()
	c.tokens = min(roomproto.Burst, c.tokens+now.Sub(c.last).Seconds()*roomproto.Rate)
	c.last = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}
