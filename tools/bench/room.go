package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/splathost/splathost/internal/roomproto"
	"github.com/splathost/splathost/internal/testenv"
)

// Shape of the multiplayer room measures (docs/embeds.md, "Multiplayer room").
const (
	// roomPeers participants each send roomEditRate edits a second for roomEditFor.
	roomPeers    = 20
	roomEditRate = 10
	roomEditFor  = 10 * time.Second
	// roomBudget is the memory a session service process is sized for (the services' idle
	// goal): how many idle participants fit in it is reported.
	roomBudgetMiB = 40
	// roomIdleRooms rooms of roomproto.Capacity idle participants fill one session process
	// for the memory measure.
	roomIdleRooms = 20
)

var (
	// GoalRoomP99 is the contract's "within 2 s" for an edit to reach the other participants.
	GoalRoomP99 = &Goal{Target: 2000, Unit: "ms"}
)

// roomRows are the room measures' rows.
type roomRows struct {
	p50One, p99One, p50Two, p99Two, perPeer, capacity, perBudget Row
}

func newRoomRows() *roomRows {
	what := fmt.Sprintf("%d participants × %d edits/s", roomPeers, roomEditRate)
	return &roomRows{
		p50One:    Row{Name: "room edit fan-out p50, " + what + ", one gateway + session process", Unit: "ms"},
		p99One:    Row{Name: "room edit fan-out p99, " + what + ", one gateway + session process", Unit: "ms", Goal: GoalRoomP99},
		p50Two:    Row{Name: "room edit fan-out p50, " + what + ", across two gateway + session processes", Unit: "ms"},
		p99Two:    Row{Name: "room edit fan-out p99, " + what + ", across two gateway + session processes", Unit: "ms", Goal: GoalRoomP99},
		perPeer:   Row{Name: "room: session process RSS per idle participant", Unit: "KiB"},
		capacity:  Row{Name: fmt.Sprintf("room: idle participants one session process holds at %d MiB RSS in all", roomBudgetMiB), Unit: "participants"},
		perBudget: Row{Name: fmt.Sprintf("room: idle participants per %d MiB of session process RSS growth", roomBudgetMiB), Unit: "participants"},
	}
}

func (rr *roomRows) all() []*Row {
	return []*Row{&rr.p50One, &rr.p99One, &rr.p50Two, &rr.p99Two, &rr.perPeer, &rr.capacity, &rr.perBudget}
}

// roomPhase starts the stack of the room measures (split, two gateways on two session
// processes, on a cold directory of its own) and runs them.
func (r *runner) roomPhase(ctx context.Context, ready *Row, rr *roomRows) {
	if !r.coldPhase(ctx, "rooms", testenv.StackOptions{Services: "split", Gateways: 2, Sessions: 2}, ready, func(st *testenv.Stack) {
		r.withTenant(st, "rooms", func(t Tenant) { r.rooms(ctx, st, t, rr) }, rr.all()...)
	}) {
		failRows(ready.Err, rr.all()...)
	}
}

// rooms runs the room measures on a split stack with two gateways, each on its own session
// process.
func (r *runner) rooms(ctx context.Context, st *testenv.Stack, t Tenant, rr *roomRows) {
	if len(st.State.GatewayURLs) < 2 {
		failRows(errors.New("the stack has one gateway: the runner needs --gateways 2 --sessions 2"), rr.all()...)
		return
	}
	gw1, gw2 := st.State.GatewayURLs[0], st.State.GatewayURLs[1]
	log := r.o.Log.With("measure", "room")
	// Memory first, on a session process that has served nothing yet, so its idle size is
	// the one a fresh process has.
	log.Info("room memory", "participants", roomIdleRooms*roomproto.Capacity)
	r.roomMemory(ctx, st, t, gw1, rr)
	for _, run := range []struct {
		name     string
		p50, p99 *Row
		gateways []string
	}{{"one process", &rr.p50One, &rr.p99One, []string{gw1}}, {"two processes", &rr.p50Two, &rr.p99Two, []string{gw1, gw2}}} {
		scene, err := t.publicScene(gw1)
		var tokens []string
		if err == nil {
			tokens, err = t.roomTokens(gw1, scene, roomPeers)
		}
		if err != nil {
			run.p50.Err, run.p99.Err = err, err
			continue
		}
		log.Info("room fan-out", "run", run.name)
		res, err := roomFanOut(ctx, run.gateways, scene, tokens)
		if err != nil {
			r.keepLogs = true
			run.p50.Err, run.p99.Err = err, err
			continue
		}
		run.p50.Value, run.p99.Value = ms(res.p50), ms(res.p99)
		run.p50.Notes = res.summary()
		run.p99.Notes = fmt.Sprintf("max %s", fmtLatency(res.max))
	}
}

// publicScene is a new scene of the tenant's customer, made public so guests' sessions join its
// room.
func (t Tenant) publicScene(gatewayURL string) (string, error) {
	id, err := t.NewScene(gatewayURL)
	if err != nil {
		return "", err
	}
	_, err = call(gatewayURL, http.MethodPatch, "/api/v1/splats/"+id, t.Headers(), map[string]any{"visibility": "public"}, http.StatusOK)
	return id, err
}

// roomTokens mints the guest editor sessions n participants use, participant i the token
// i/roomproto.PerHolder (a session holds at most that many sockets); named so participants are
// not "Guest N"; with coEdit for scene when it is set, so every participant edits.
func (t Tenant) roomTokens(gatewayURL, scene string, n int) ([]string, error) {
	body := map[string]any{"publicKey": t.PublicKey, "type": "editor", "user": map[string]any{"name": "Bench participant"}}
	if scene != "" {
		body["coEdit"], body["splatId"] = true, scene
	}
	var tokens []string
	for range (n + roomproto.PerHolder - 1) / roomproto.PerHolder {
		token, err := callID(gatewayURL, http.MethodPost, "/api/editor/embed-sessions",
			map[string]string{"Authorization": "Bearer " + t.SecretKey}, body, http.StatusCreated, "sessionToken")
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, token)
	}
	return tokens, nil
}

// mintSession mints a session of the tenant's customer with the request's fields (type, splatId,
// user) and returns its token.
func (t Tenant) mintSession(gatewayURL string, fields map[string]any) (string, error) {
	req := map[string]any{"publicKey": t.PublicKey}
	for k, v := range fields {
		req[k] = v
	}
	return callID(gatewayURL, http.MethodPost, "/api/editor/embed-sessions",
		map[string]string{"Authorization": "Bearer " + t.SecretKey, externalUserHeader: t.ExternalUserID}, req, http.StatusCreated, "sessionToken")
}

// roomConn dials the room of scene on the gateway at base and waits for its welcome.
func roomConn(ctx context.Context, base, scene, token string) (*websocket.Conn, error) {
	q := url.Values{"splatId": {scene}, "session": {token}}
	u := "ws" + strings.TrimPrefix(base, "http") + roomproto.Path + "?" + q.Encode()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, u, nil)
	if err != nil {
		return nil, err
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var m struct{ Type, Code, Message string }
	if err := ws.ReadJSON(&m); err != nil || m.Type != "welcome" {
		ws.Close()
		if err == nil {
			err = fmt.Errorf("%s %s: %s", m.Type, m.Code, m.Message)
		}
		return nil, fmt.Errorf("room join: %w", err)
	}
	_ = ws.SetReadDeadline(time.Time{})
	return ws, nil
}

// fanOut is one fan-out run's result.
type fanOut struct {
	p50, p99, max time.Duration
	sent, got     int64
	want          int64
	errs          int64
	// closes counts, by reason, the participants the room closed or sent an error frame.
	closes map[string]int64
}

func (f fanOut) summary() string {
	s := fmt.Sprintf("%d edits sent, %d of %d deliveries received, %d errors", f.sent, f.got, f.want, f.errs)
	if len(f.closes) > 0 {
		reasons := make([]string, 0, len(f.closes))
		for r, n := range f.closes {
			reasons = append(reasons, fmt.Sprintf("%s ×%d", r, n))
		}
		slices.Sort(reasons)
		s += "; the room closed participants: " + strings.Join(reasons, ", ")
	}
	return s
}

// roomFanOut joins roomPeers participants to scene's room, spread over gateways in turn, has
// each send roomEditRate edits a second for roomEditFor (the send time inside the edit), and
// measures the time from send to receipt at every other participant.
func roomFanOut(ctx context.Context, gateways []string, scene string, tokens []string) (fanOut, error) {
	conns := make([]*websocket.Conn, roomPeers)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := roomConn(ctx, gateways[i%len(gateways)], scene, tokens[i/roomproto.PerHolder])
		if err != nil {
			return fanOut{}, err
		}
		conns[i] = c
	}
	var mu sync.Mutex
	var lat []time.Duration
	var got, errs, sent atomic.Int64
	// A participant the room closes (or sends an error frame) before the bench hangs up is a
	// reason for lost deliveries (TOO_SLOW for a reader the room gave up on): counted by reason.
	var hangingUp atomic.Bool
	closes := map[string]int64{}
	closed := func(reason string) {
		mu.Lock()
		closes[reason]++
		mu.Unlock()
	}
	var readers sync.WaitGroup
	// Joins of later participants arrive first; only edits are timed.
	for _, c := range conns {
		readers.Go(func() {
			for {
				var m struct {
					Type   string
					Code   string
					Fields struct {
						LevelData struct {
							Bench struct{ T int64 } `json:"bench"`
						} `json:"levelData"`
					}
				}
				if err := c.ReadJSON(&m); err != nil {
					if !hangingUp.Load() {
						var ce *websocket.CloseError
						if errors.As(err, &ce) {
							closed(fmt.Sprintf("close %d", ce.Code))
						} else {
							closed("read error")
						}
					}
					return
				}
				if m.Type == "error" {
					closed("error frame " + m.Code)
				}
				if m.Type != "edit" || m.Fields.LevelData.Bench.T == 0 {
					continue
				}
				d := time.Since(time.Unix(0, m.Fields.LevelData.Bench.T))
				got.Add(1)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	var senders sync.WaitGroup
	end := time.Now().Add(roomEditFor)
	for i, c := range conns {
		senders.Go(func() {
			// Spread the participants' ticks over one period.
			time.Sleep(time.Duration(i) * time.Second / roomEditRate / roomPeers)
			tick := time.NewTicker(time.Second / roomEditRate)
			defer tick.Stop()
			for time.Now().Before(end) && ctx.Err() == nil {
				<-tick.C
				edit := map[string]any{"type": "edit", "fields": map[string]any{"levelData": map[string]any{
					"bench": map[string]any{"t": time.Now().UnixNano(), "from": i}}}}
				_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if err := c.WriteJSON(edit); err != nil {
					errs.Add(1)
					return
				}
				sent.Add(1)
			}
		})
	}
	senders.Wait()
	want := sent.Load() * (roomPeers - 1)
	// Let the last edits arrive (the goal is 2 s), then close.
	for deadline := time.Now().Add(5 * time.Second); got.Load() < want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	hangingUp.Store(true)
	for _, c := range conns {
		c.Close()
	}
	readers.Wait()
	res := fanOut{sent: sent.Load(), got: got.Load(), want: want, errs: errs.Load(), closes: closes}
	if len(lat) == 0 {
		return res, errors.New("no edit arrived: " + res.summary())
	}
	slices.Sort(lat)
	res.p50, res.p99, res.max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	if res.got < res.want {
		return res, errors.New("edits lost: " + res.summary())
	}
	return res, nil
}

// roomMemory fills one session process (behind gateway base) with idle participants, in full
// rooms, and reads how much its memory grew: the per-participant cost, and how many fit in
// roomBudgetMiB beside what the process holds idle. The figure is an extrapolation from the
// growth measured over roomIdleRooms full rooms, stated as such.
func (r *runner) roomMemory(ctx context.Context, st *testenv.Stack, t Tenant, base string, rr *roomRows) {
	pid := 0
	for _, p := range st.State.Processes {
		if p.Name == "session" {
			pid = p.PID
		}
	}
	fail := func(err error) { rr.perPeer.Err, rr.capacity.Err, rr.perBudget.Err = err, err, err }
	if pid == 0 {
		fail(errors.New("no session process in the state file"))
		return
	}
	// The sessions are minted before the first reading: minting is the session process's too.
	tokens, err := t.roomTokens(base, "", roomIdleRooms*roomproto.Capacity)
	if err != nil {
		fail(err)
		return
	}
	before, err := ReadMemory(pid, false)
	if err != nil {
		fail(err)
		return
	}
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	n := 0
	for room := 0; room < roomIdleRooms; room++ {
		scene, err := t.publicScene(base)
		if err != nil {
			fail(err)
			return
		}
		for i := 0; i < roomproto.Capacity; i++ {
			c, err := roomConn(ctx, base, scene, tokens[n/roomproto.PerHolder])
			if err != nil {
				fail(fmt.Errorf("participant %d: %w", n, err))
				return
			}
			conns = append(conns, c)
			// Read (and so answer pings) and drop what the room sends.
			go func() {
				for {
					if _, _, err := c.ReadMessage(); err != nil {
						return
					}
				}
			}()
			n++
		}
	}
	// Idle: the joins' garbage collected, the heartbeat run.
	time.Sleep(12 * time.Second)
	after, err := ReadMemory(pid, false)
	if err != nil {
		fail(err)
		return
	}
	growth := after.RSSKiB - before.RSSKiB
	per := float64(growth) / float64(n)
	rr.perPeer.Value = per
	rr.perPeer.Notes = fmt.Sprintf("session RSS %.1f → %.1f MiB with %d idle participants in %d full rooms",
		kibToMiB(before.RSSKiB), kibToMiB(after.RSSKiB), n, roomIdleRooms)
	if per <= 0 {
		err := fmt.Errorf("no measurable growth over %d participants", n)
		rr.capacity.Err, rr.perBudget.Err = err, err
		return
	}
	// Both figures are extrapolations from the growth measured over n participants: the
	// process's whole RSS at the budget (its idle size counted), and the budget spent on rooms
	// alone.
	room := max(0, float64(roomBudgetMiB)*1024-float64(before.RSSKiB))
	rr.capacity.Value = float64(int64(room / per))
	rr.capacity.Notes = fmt.Sprintf("extrapolated: (%d MiB − %.1f MiB idle) / %.1f KiB each, measured over %d",
		roomBudgetMiB, kibToMiB(before.RSSKiB), per, n)
	all := float64(roomBudgetMiB) * 1024 / per
	rr.perBudget.Value = float64(int64(all))
	rr.perBudget.Notes = fmt.Sprintf("extrapolated: %d MiB / %.1f KiB each = %d full rooms of %d",
		roomBudgetMiB, per, int64(all)/roomproto.Capacity, roomproto.Capacity)
}
