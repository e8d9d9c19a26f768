package gateway

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNewReplicaSet(t *testing.T) {
	set, err := newReplicaSet("http://127.0.0.1:1, http://127.0.0.1:2/")
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, set.hosts)
	for _, bad := range []string{"", "127.0.0.1:1", "https://a:1", "http://a:1,", "http://a:1/api"} {
		_, err := newReplicaSet(bad)
		require.Error(t, err, bad)
	}
}

// TestForwardBalancesReplicasAndFailsOver sends requests one after another (a keep-alive pool
// alone would reuse one connection to one replica) through a forwarder to two replicas: they
// take turns. Then one replica goes away (its port refuses connections): every request is
// answered by the other, at once, with no backoff.
func TestForwardBalancesReplicasAndFailsOver(t *testing.T) {
	replica := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name)
		}))
	}
	a, b := replica("a"), replica("b")
	defer a.Close()
	defer b.Close()
	app, _ := forwardApp(t, a.URL+","+b.URL, slog.New(slog.NewTextHandler(io.Discard, nil)))

	get := func() string {
		resp, err := app.Test(httptest.NewRequest(http.MethodPost, "/x", strings.NewReader("body")), -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		return string(body)
	}
	seen := map[string]int{}
	for range 10 {
		seen[get()]++
	}
	require.Equal(t, map[string]int{"a": 5, "b": 5}, seen)

	b.Close() // closes the listener too: its port refuses connections
	start := time.Now()
	for range 10 {
		require.Equal(t, "a", get())
	}
	require.Less(t, time.Since(start), time.Duration(10)*upstreamBackoffMin, "failover needs no backoff")
}

// TestUpstreamReadyWhenOneReplicaIs: the gateway is ready while one replica of a service is.
func TestUpstreamReadyWhenOneReplicaIs(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx := context.Background()
	require.NoError(t, upstreamReady(down+","+ok.URL)(ctx))
	require.Error(t, upstreamReady(down)(ctx))
}

// TestReplicaAffinity: every gateway sends an integration's requests to the same replica (its
// reads see its writes, which that replica's cache holds at once), and integrations spread.
func TestReplicaAffinity(t *testing.T) {
	one, err := newReplicaSet("http://a:1,http://b:1,http://c:1")
	require.NoError(t, err)
	other, err := newReplicaSet("http://a:1,http://b:1,http://c:1")
	require.NoError(t, err)
	used := map[int]bool{}
	for i := range 30 {
		key := "integration-" + string(rune('a'+i))
		first := one.start(key)
		for range 3 {
			require.Equal(t, first, one.start(key))
			require.Equal(t, first, other.start(key), "another gateway picks the same replica")
		}
		used[first] = true
	}
	require.Len(t, used, 3, "integrations spread over every replica")
	// Without a key, in turn.
	require.Equal(t, []int{0, 1, 2, 0}, []int{one.start(""), one.start(""), one.start(""), one.start("")})
}
