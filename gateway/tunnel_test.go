package gateway

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/roomproto"
	"github.com/splathost/splathost/internal/routes"
)

// tunnelGateway serves a gateway whose session upstream (with the room's upgrade route) is at
// upstream, on a real listener: a WebSocket needs a connection to hijack.
func tunnelGateway(t *testing.T, upstream string) string {
	t.Helper()
	app, err := New(Options{
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), BodyLimit: 1 << 20, AdminToken: "admin-token-0123456789",
		InternalSecret: []byte("internal-secret-for-tests"), Sessions: fakeSessions{},
		Upstreams: []Upstream{{Name: "session", Prefixes: routes.Session, Upgrade: []string{roomproto.Path}, URL: upstream}},
	})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	return "ws://" + ln.Addr().String()
}

// closeCodeOf reads until the connection ends and returns the close code (-1 without one), and
// the error frame's code if one came first.
func closeCodeOf(t *testing.T, ws *websocket.Conn) (string, int) {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var frame string
	for {
		_, b, err := ws.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return frame, ce.Code
		}
		if err != nil {
			return frame, -1
		}
		if strings.Contains(string(b), `"type":"error"`) {
			frame = string(b)
		}
	}
}

// TestTunnelForwardsTheRoomUpgrade: the split gateway authenticates the room's ?session= token,
// sends the upgrade on with the caller signed and without the token, and splices frames both
// ways; a bad token is closed with 4401 by the gateway itself, a plain GET answers 426.
func TestTunnelForwardsTheRoomUpgrade(t *testing.T) {
	secret := []byte("internal-secret-for-tests")
	var mu sync.Mutex
	var gotQuery string
	var gotCaller *httpx.Caller
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := httpx.VerifyCaller(secret, r.Header.Get(httpx.CallerHeader), time.Now())
		mu.Lock()
		gotQuery, gotCaller = r.URL.RawQuery, caller
		mu.Unlock()
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		// Sent right after the 101: the tunnel must pass on what arrived with the answer.
		_ = ws.WriteMessage(websocket.TextMessage, []byte("welcome"))
		for {
			kind, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			_ = ws.WriteMessage(kind, append([]byte("echo "), b...))
		}
	}))
	t.Cleanup(up.Close)
	gw := tunnelGateway(t, up.URL)

	ws, _, err := websocket.DefaultDialer.Dial(gw+roomproto.Path+"?splatId=0123456789abcdef01234567&session=good", nil)
	require.NoError(t, err)
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := ws.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, "welcome", string(b))
	big := strings.Repeat("x", 40<<10) // larger than a copy buffer: passes in pieces
	for _, m := range []string{"one", big} {
		require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte(m)))
		_, b, err = ws.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, "echo "+m, string(b))
	}
	mu.Lock()
	require.Equal(t, "splatId=0123456789abcdef01234567", gotQuery, "the token never reaches the service")
	require.NotNil(t, gotCaller)
	require.Equal(t, httpx.SchemeSession, gotCaller.Scheme)
	require.Equal(t, "i1", gotCaller.IntegrationID)
	mu.Unlock()

	bad, _, err := websocket.DefaultDialer.Dial(gw+roomproto.Path+"?splatId=0123456789abcdef01234567&session=forged", nil)
	require.NoError(t, err)
	frame, code := closeCodeOf(t, bad)
	require.Equal(t, 4401, code)
	require.Contains(t, frame, `"code":"UNAUTHORIZED"`)

	resp, err := http.Get("http" + strings.TrimPrefix(gw, "ws") + roomproto.Path + "?session=good")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUpgradeRequired, resp.StatusCode)
}

// TestTunnelBoundsTheUpstreamHeader: an upstream answer whose header does not fit the tunnel's
// bound is refused (1013, try again), never read without limit.
func TestTunnelBoundsTheUpstreamHeader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = http.ReadRequest(bufio.NewReader(c))
				_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Big: "+
					strings.Repeat("y", tunnelMaxHeader)+"\r\n\r\n")
				time.Sleep(time.Second)
			}()
		}
	}()
	gw := tunnelGateway(t, "http://"+ln.Addr().String())
	ws, _, err := websocket.DefaultDialer.Dial(gw+roomproto.Path+"?splatId=0123456789abcdef01234567&session=good", nil)
	require.NoError(t, err)
	defer ws.Close()
	_, code := closeCodeOf(t, ws)
	require.Equal(t, httpx.CloseTryAgainLater, code)
}
