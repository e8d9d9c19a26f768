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
	// expires is when the participant's session token ends (zero: never checked).
	expires time.Time

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
	msg, _ := json.Marshal(welcomeMsg{Type: "welcome", Self: j.self, Peers: j.peers, Draft: j.draft, Seq: j.seq})
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
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked(code, errCode, message)
}

func (c *roomConn) closeLocked(code int, errCode, message string) {
	if c.closing || c.done {
		return
	}
	c.closing = true
	c.closeAt = &closeItem{frame: httpx.ErrorFrame(errCode, message), code: code, reason: message}
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

// closeFailed closes c for a failed message: err's code and frame (httpx.CloseCode).
func (c *roomConn) closeFailed(err error) {
	e := apperr.From(err)
	if e.Status >= 500 {
		c.rooms.log.Error("room message failed", "error", err)
	}
	code := httpx.CloseCode(e)
	if errors.Is(err, errDraftTooLarge) {
		code = httpx.CloseTooBig
	}
	c.closeWith(code, httpx.ErrorCode(e), e.Message)
}

// isClosing reports whether the close is queued or the connection is over.
func (c *roomConn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing || c.done
}

// read handles the client's messages until the connection ends. It reports whether the client
// itself closed it (a voluntary leave).
func (c *roomConn) read() bool {
	c.ws.SetReadLimit(roomproto.MaxMessage)
	_ = c.ws.SetReadDeadline(time.Now().Add(roomReadIdle))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(roomReadIdle)) })
	for {
		kind, frame, err := c.ws.ReadMessage()
		if err != nil {
			return c.ended(err)
		}
		if c.isClosing() {
			continue // draining until the client's close
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(roomReadIdle))
		if err := c.handle(kind, frame); err != nil {
			c.closeFailed(err)
		}
	}
}

// ended sorts out how the connection ended.
func (c *roomConn) ended(err error) bool {
	if errors.Is(err, websocket.ErrReadLimit) {
		// The library has sent 1009 already; drain what the client still sends (see write).
		c.mu.Lock()
		c.closing, c.queue = true, nil
		c.mu.Unlock()
		conn := c.ws.UnderlyingConn()
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, _ = io.Copy(io.Discard, conn)
		return false
	}
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
	case kindEdit:
		err = c.rooms.store.edit(ctx, c.room, c.id, in.fields)
	case kindCamera:
		err = c.rooms.store.camera(ctx, c.room, c.id, in.camera)
	case kindSaved:
		err = c.rooms.store.saved(ctx, c.room, c.id, in.splat)
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
