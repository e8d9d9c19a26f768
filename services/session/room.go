package session

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/roomproto"
	"github.com/splathost/splathost/internal/scenes"
)

// Connection timing. The server pings every roomPingEvery; a connection that sends nothing, not
// even a pong, for roomReadIdle is dead (a half-open TCP connection never errors by itself).
const (
	roomPingEvery = 20 * time.Second
	roomReadIdle  = 45 * time.Second
	roomWriteWait = 10 * time.Second
	// roomQueue is how many frames may wait for a slow client; a client further behind is
	// closed (1008) rather than let the process buffer without bound.
	roomQueue = 128
	// roomPending bounds the events held for a joining participant until its welcome is sent.
	roomPending = 1024
	// roomStoreWait bounds each Postgres step of a message.
	roomStoreWait = 5 * time.Second
	// roomShutdownWait bounds the shutdown's wait for connections to close.
	roomShutdownWait = 5 * time.Second
)

// Session keys of the end-user profile (the token's user), which the room shows.
const (
	claimName   = "name"
	claimAvatar = "avatarUrl"
	// claimExp is the token's expiry (unix seconds): a number in-process, a JSON number
	// (float64) after the signed caller header.
	claimExp = "exp"
)

// sessionExpiry is the expiry of the caller's token, or the zero time when it carries none.
func sessionExpiry(session map[string]any) time.Time {
	switch v := session[claimExp].(type) {
	case int64:
		return time.Unix(v, 0)
	case float64:
		return time.Unix(int64(v), 0)
	}
	return time.Time{}
}

// Rooms is one session service process's side of the multiplayer rooms: its participants'
// WebSockets, joined to every other process's through Postgres (roomStore). Run must be
// running for rooms to admit anyone.
type Rooms struct {
	store *roomStore
	log   *slog.Logger
	// ent reads scenes (rights, saved scenes); urls renders a saved scene's asset URLs.
	ent  *ent.Client
	urls *scenes.AssetURLs
	// creds answers whether a participant's integration and customer still hold their rights
	// (UseIntegrations); without it the rooms admit nobody.
	creds IntegrationLookup
	// live is true while the LISTEN connection is up: without it this process would miss
	// other processes' events, so it admits nobody.
	live atomic.Bool
	// events are the NOTIFY payloads, dispatched in arrival order by one goroutine.
	events chan string
	// stopped is closed when shutdown begins: from then on every request is refused with 1012.
	stopped chan struct{}

	mu sync.Mutex
	// rooms are the local participants by room key.
	rooms map[string]map[*roomConn]struct{}
	// connected says the listener connected before: a later connect is a reconnect, after
	// which every local participant resyncs (events may have been missed in between).
	connected bool
	conns     sync.WaitGroup
}

// NewRooms returns the rooms of a process over the database d.
func NewRooms(d *db.DB, log *slog.Logger) *Rooms {
	return &Rooms{
		store:   &roomStore{pool: d.Pool, process: ids.New()},
		log:     log,
		ent:     d.Ent,
		events:  make(chan string, 4096),
		stopped: make(chan struct{}),
		rooms:   map[string]map[*roomConn]struct{}{},
	}
}

// UseIntegrations wires the credential cache the rooms check their participants' integration
// and customer against (the process's credentials.Cache, listening for changes): a revoked
// integration or a customer made inactive closes their sockets within rightsEvery.
func (r *Rooms) UseIntegrations(l IntegrationLookup) { r.creds = l }

// Ready is the rooms' readiness check: the LISTEN connection that carries other processes'
// events is up.
func (r *Rooms) Ready(context.Context) error {
	if !r.live.Load() {
		return errors.New("room LISTEN connection is down")
	}
	return nil
}

// Run listens for room events, refreshes this process's presence rows, sweeps dead processes'
// rows and checks its participants' rights (recheck) until ctx ends; then it closes every connection with 1012 (clients
// reconnect, to another process or to this one restarted), deletes this process's rows and
// returns. The database must stay open until Run has returned.
func (r *Rooms) Run(ctx context.Context) {
	listenCtx, stopListen := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Go(func() {
		db.Listen(listenCtx, r.store.pool, db.Listener{Channel: RoomChannel, OnConnect: r.onConnect,
			OnNotify: func(p string) { r.events <- p }, Live: &r.live, Log: r.log})
	})
	bg.Go(func() { r.dispatch(listenCtx) })
	tick := time.NewTicker(presenceEvery)
	defer tick.Stop()
	ping := time.NewTicker(roomPingEvery)
	defer ping.Stop()
	check := time.NewTicker(rightsEvery)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			r.shutdown()
			stopListen()
			bg.Wait()
			return
		case <-tick.C:
			r.heartbeat(ctx)
		case <-check.C:
			r.recheck(ctx)
		case <-ping.C:
			r.ping()
		}
	}
}

// onConnect runs when the LISTEN connection is (re)established. After a reconnect, events of
// the gap are lost: every local participant is closed with 1012 and resyncs from a welcome.
func (r *Rooms) onConnect() {
	r.mu.Lock()
	again := r.connected
	r.connected = true
	conns := r.all()
	r.mu.Unlock()
	if !again {
		return
	}
	for _, c := range conns {
		c.closeWith(httpx.CloseServiceRestart, "RESYNC", "the room's connection to the database was re-established: reconnect to resync")
	}
}

// all lists every local connection; r.mu must be held.
func (r *Rooms) all() []*roomConn {
	var out []*roomConn
	for _, conns := range r.rooms {
		for c := range conns {
			out = append(out, c)
		}
	}
	return out
}

// heartbeat refreshes this process's presence rows and sweeps the rows of dead processes. A
// local participant whose row is gone (swept while this process could not reach Postgres) is
// invisible to the others: it is closed with 1012 and rejoins.
func (r *Rooms) heartbeat(ctx context.Context) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, roomStoreWait)
	defer cancel()
	have, err := r.store.heartbeat(ctx)
	if err != nil {
		r.log.Warn("room presence refresh failed", "error", err)
		return
	}
	r.mu.Lock()
	conns := r.all()
	r.mu.Unlock()
	for _, c := range conns {
		if c.joinedBefore(start) && !have[c.id] {
			c.closeWith(httpx.CloseServiceRestart, "RESYNC", "this participant's presence expired: reconnect to rejoin")
		}
	}
	if err := r.store.sweep(ctx); err != nil {
		r.log.Warn("room sweep failed", "error", err)
	}
}

// dispatch hands every event to the local participants of its room, in NOTIFY order.
func (r *Rooms) dispatch(ctx context.Context) {
	for {
		var payload string
		select {
		case <-ctx.Done():
			return
		case payload = <-r.events:
		}
		var ev roomEvent
		if err := json.Unmarshal([]byte(payload), &ev); err != nil {
			r.log.Warn("room event unreadable", "error", err)
			continue
		}
		if ev.Ref != 0 {
			fetchCtx, cancel := context.WithTimeout(ctx, roomStoreWait)
			stored, err := r.store.message(fetchCtx, ev.Ref)
			cancel()
			if err == nil {
				ev = roomEvent{}
				err = json.Unmarshal([]byte(stored), &ev)
			}
			if err != nil {
				r.log.Warn("room event row unreadable", "ref", ev.Ref, "error", err)
				continue
			}
		}
		if ev.Evict != "" {
			r.evict(&ev)
			continue
		}
		if ev.Saved != "" && !r.saved(ctx, &ev) {
			continue
		}
		r.mu.Lock()
		for c := range r.rooms[ev.Room] {
			c.deliver(&ev)
		}
		r.mu.Unlock()
	}
}

// evict closes the local participant whose seat was given away (roomStore.evictGuest), if it is
// here; its row and its leave are already gone.
func (r *Rooms) evict(ev *roomEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.rooms[ev.Room] {
		if c.id == ev.Evict {
			c.closeWith(CloseEvicted, "SEAT_TAKEN", evictedMessage)
		}
	}
}

// shutdown closes every local connection with 1012, waits for them to leave, and deletes
// whatever rows of this process remain.
func (r *Rooms) shutdown() {
	r.mu.Lock()
	close(r.stopped)
	conns := r.all()
	r.mu.Unlock()
	for _, c := range conns {
		c.closeWith(httpx.CloseServiceRestart, "SHUTTING_DOWN", "the server is restarting: reconnect")
	}
	done := make(chan struct{})
	go func() { r.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(roomShutdownWait):
		r.log.Warn("room connections still open at shutdown")
	}
	ctx, cancel := context.WithTimeout(context.Background(), roomStoreWait)
	defer cancel()
	if err := r.store.leaveAll(ctx); err != nil {
		r.log.Warn("room presence rows not deleted at shutdown; they expire in 15 s", "error", err)
	}
}

// upgrade switches the request to a WebSocket and serves the participant on it.
func (r *Rooms) upgrade(c *fiber.Ctx, adm *admission) error {
	err := httpx.Upgrader.Upgrade(c.Context(), func(ws *websocket.Conn) { r.serve(ws, adm) })
	if err != nil {
		return apperr.Invalid("bad WebSocket handshake", "headers: "+err.Error())
	}
	return nil
}

// serve runs one participant: join, welcome, then its messages until either side closes.
func (r *Rooms) serve(ws *websocket.Conn, adm *admission) {
	select {
	case <-r.stopped:
		httpx.CloseWebSocket(ws, httpx.ErrorFrame("SHUTTING_DOWN", "the server is restarting: reconnect"),
			httpx.CloseServiceRestart, "the server is restarting")
		return
	default:
	}
	if !r.live.Load() {
		httpx.CloseWebSocket(ws, httpx.ErrorFrame("RESYNC", "the room is reconnecting to its database: reconnect"),
			httpx.CloseServiceRestart, "the room is reconnecting: retry")
		return
	}
	c := &roomConn{rooms: r, ws: ws, room: adm.room, id: ids.New(), rights: adm.rights, tokens: roomproto.Burst, last: time.Now()}
	if !r.register(c) {
		httpx.CloseWebSocket(ws, httpx.ErrorFrame("SHUTTING_DOWN", "the server is restarting: reconnect"),
			httpx.CloseServiceRestart, "the server is restarting")
		return
	}
	defer r.conns.Done()
	ctx, cancel := context.WithTimeout(context.Background(), roomStoreWait)
	j, err := r.store.join(ctx, c.id, adm)
	cancel()
	if err != nil {
		r.unregister(c)
		if apperr.From(err).Status >= 500 {
			r.log.Error("room join failed", "error", err)
		}
		e := apperr.From(err)
		httpx.CloseWebSocket(ws, httpx.ErrorFrame(httpx.ErrorCode(e), e.Message), httpx.CloseCode(e), e.Message)
		return
	}
	c.welcome(j)
	voluntary := c.read()
	c.finish()
	r.unregister(c)
	ctx, cancel = context.WithTimeout(context.Background(), roomStoreWait)
	defer cancel()
	if err := r.store.leave(ctx, c.room, c.id, voluntary); err != nil {
		r.log.Warn("room leave not recorded; the row expires in 15 s", "error", err)
	}
}

// register adds c to its room; false once shutdown has begun.
func (r *Rooms) register(c *roomConn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.stopped:
		return false
	default:
	}
	r.conns.Add(1)
	conns := r.rooms[c.room]
	if conns == nil {
		conns = map[*roomConn]struct{}{}
		r.rooms[c.room] = conns
	}
	conns[c] = struct{}{}
	return true
}

func (r *Rooms) unregister(c *roomConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.rooms[c.room], c)
	if len(r.rooms[c.room]) == 0 {
		delete(r.rooms, c.room)
	}
}

// ping pings every local participant (the rooms' one ticker, rather than one per connection):
// a client that stops answering is dropped by its read deadline.
func (r *Rooms) ping() {
	r.mu.Lock()
	conns := r.all()
	r.mu.Unlock()
	for _, c := range conns {
		// WriteControl may run beside a frame being written; a stalled client holds only this
		// short-lived goroutine, until the deadline.
		go func() { _ = c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(roomWriteWait)) }()
	}
}
