//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/gateway"
)

// rawExchange writes req (bytes written by hand: net/http cannot send a repeated
// Content-Length) on a new connection to the gateway and reads one answer; closed then reports
// whether the gateway closed the connection without answering anything else written on it.
func rawExchange(t *testing.T, req string) (resp *http.Response, body []byte, closed func() bool) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	// A bound on a broken gateway, not a figure the test waits for: every read below ends as
	// soon as the gateway answers or closes.
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Write([]byte(req))
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err, "the gateway answers at once, without waiting for a body whose length is in doubt")
	body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	return resp, body, func() bool {
		// A close with bytes of ours still unread in the gateway's socket is a reset.
		_, err := br.ReadByte()
		return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
	}
}

// TestAmbiguousFramingRefused: a request whose body two readers could frame differently (issue
// 38: two Content-Length headers, 0 and 50, answered 200) is refused at the gateway with 400 and
// the envelope, before its body is read and before any service sees it, and the connection is
// closed, so bytes a proxy in front would have framed as a second request are never answered.
func TestAmbiguousFramingRefused(t *testing.T) {
	a := newTenant(t)
	body := `{"metadata":{"smuggled":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}`
	head := func(eu string, framing ...string) string {
		return "PUT /api/v1/external-user HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + a.SecretKey +
			"\r\nX-Service-Public-Key: " + a.PublicKey + "\r\nX-Service-External-User-Id: " + eu +
			"\r\nContent-Type: application/json\r\n" + strings.Join(framing, "\r\n") + "\r\n\r\n"
	}
	cl := "Content-Length: " + strconv.Itoa(len(body))
	chunked := strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n"
	// The next request a front proxy taking the first length would see in the body.
	next := "GET /api/v1/external-user HTTP/1.1\r\nHost: x\r\n\r\n"

	for _, tt := range []struct{ name, req, issue string }{
		{"two lengths, 0 and 50 (the attacker's)", head("cl-cl", "Content-Length: 0", cl) + body, "Content-Length appears 2 times"},
		{"two lengths, 50 and 0, then a request", head("cl-cl2", cl, "Content-Length: 0") + body + next, "Content-Length appears 2 times"},
		{"two equal lengths", head("cl-same", cl, cl) + body, "Content-Length appears 2 times"},
		{"two lengths, no body sent", head("cl-nobody", "Content-Length: 0", "Content-Length: 50"), "Content-Length appears 2 times"},
		{"length beside chunked", head("cl-te", cl, "Transfer-Encoding: chunked") + chunked, "Content-Length beside Transfer-Encoding"},
		{"chunked beside a zero length, then a request", head("te-cl", "Transfer-Encoding: chunked", "Content-Length: 0") + chunked + next, "Content-Length beside Transfer-Encoding"},
		{"chunked twice", head("te-te", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked") + chunked, "Transfer-Encoding appears 2 times"},
		{"a coding other than chunked", head("te-gzip", "Transfer-Encoding: gzip") + chunked, "is not supported"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, raw, closed := rawExchange(t, tt.req)
			require.Equal(t, 400, resp.StatusCode, string(raw))
			var env map[string]any
			require.NoError(t, json.Unmarshal(raw, &env), string(raw))
			require.Equal(t, "error", env["status"])
			require.Equal(t, gateway.AmbiguousFramingCode, env["code"])
			require.NotEmpty(t, env["message"])
			require.True(t, issuesMention(env["issues"].([]any), tt.issue), string(raw))
			require.True(t, resp.Close, "the answer says the connection closes")
			require.True(t, closed(), "nothing after the refused header is answered")
		})
	}
	// Nothing reached the user service: no customer was created by any of them.
	for _, eu := range []string{"cl-cl", "cl-cl2", "cl-same", "cl-nobody", "cl-te", "te-cl", "te-te", "te-gzip"} {
		requireEnvelope(t, do(t, "GET", "/api/v1/external-user", a.keys(eu), nil), 404)
	}

	// The same request framed one way is served, by length and chunked, on a connection that
	// stays open.
	for name, req := range map[string]string{
		"length":  head("one-length", cl) + body,
		"chunked": head("one-chunked", "Transfer-Encoding: chunked") + chunked,
	} {
		resp, raw, _ := rawExchange(t, req)
		require.Equal(t, 200, resp.StatusCode, "%s: %s", name, raw)
		require.False(t, resp.Close, name)
	}
}
