package gateway

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
)

// forwardApp is an app that forwards every request to base, with the gateway's error handler.
func forwardApp(t *testing.T, base string, log *slog.Logger) (*fiber.App, *forwarder) {
	t.Helper()
	fwd, err := newForwarder("test", base, []byte("internal-secret-for-tests"), log)
	require.NoError(t, err)
	app := httpx.NewApp("gateway", log, 1<<20, 0)
	app.All("/*", fwd.handle)
	return app, fwd
}

// serveOn serves h on addr (reusing a port a previous server left) until the returned stop.
func serveOn(t *testing.T, addr string, h http.Handler) (stop func()) {
	t.Helper()
	var ln net.Listener
	require.Eventually(t, func() bool {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() } // abrupt: listener and every connection, like kill -9
}

// TestForwardSurvivesAnUpstreamRestart keeps 32 clients sending GETs and POSTs through the
// forwarder while its upstream dies (every connection closed) and comes back 400 ms later on
// the same port: no request fails, because the dead pooled connections and the refused dials are
// retried until the upstream answers.
func TestForwardSurvivesAnUpstreamRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	var served atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = io.WriteString(w, "ok "+r.Method)
	})
	stop := serveOn(t, addr, handler)
	var logs strings.Builder
	var logMu sync.Mutex
	app, _ := forwardApp(t, "http://"+addr, slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil)))

	var failures atomic.Int64
	var sent atomic.Int64
	// No POST is in flight when the upstream dies (one it was handling could have been applied,
	// and is not resent); POSTs sent after it died, on the dead pooled connections, are resent.
	var posts sync.RWMutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		method := "GET"
		if i%4 == 0 {
			method = "POST"
		}
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if method == "POST" {
					posts.RLock()
				}
				resp, err := app.Test(httptest.NewRequest(method, "/api/v1/splats", nil), 10_000)
				if method == "POST" {
					posts.RUnlock()
				}
				sent.Add(1)
				if err != nil || resp.StatusCode != 200 {
					failures.Add(1)
				}
				if err == nil {
					_ = resp.Body.Close()
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	before := served.Load()
	require.Positive(t, before)
	posts.Lock()
	stop()
	posts.Unlock()
	time.Sleep(400 * time.Millisecond)
	stop = serveOn(t, addr, handler)
	defer func() { stop() }()
	require.Eventually(t, func() bool { return served.Load() > before+500 }, 10*time.Second, 10*time.Millisecond)
	close(done)
	wg.Wait()
	require.Zero(t, failures.Load(), "of %d requests", sent.Load())
	logMu.Lock()
	defer logMu.Unlock()
	require.Contains(t, logs.String(), "upstream answered after retries")
	require.Contains(t, logs.String(), "upstream=test")
}

// TestForwardResendsOnlyWhatIsSafe has an upstream that reads each request and drops the
// connection without answering (a service killed mid-request): a POST is sent once and answered
// 504 OUTCOME_UNKNOWN (the service may have acted) with the cause logged, a GET is resent until
// the retry bound and then answered 502.
func TestForwardResendsOnlyWhatIsSafe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var received atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				if _, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
					received.Add(1)
				}
			}()
		}
	}()
	var logs strings.Builder
	var logMu sync.Mutex
	app, fwd := forwardApp(t, "http://"+ln.Addr().String(), slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil)))
	fwd.retryFor = 300 * time.Millisecond

	resp, err := app.Test(httptest.NewRequest("POST", "/api/embed/views", strings.NewReader("{}")), 5000)
	require.NoError(t, err)
	require.Equal(t, 504, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `"code":"OUTCOME_UNKNOWN"`)
	require.Equal(t, int64(1), received.Load(), "a POST the upstream may have applied is not resent")

	resp, err = app.Test(httptest.NewRequest("GET", "/api/v1/splats", nil), 5000)
	require.NoError(t, err)
	require.Equal(t, 502, resp.StatusCode)
	require.Greater(t, received.Load(), int64(2), "a GET is resent")

	logMu.Lock()
	defer logMu.Unlock()
	require.Contains(t, logs.String(), "upstream request failed")
	require.Contains(t, logs.String(), "route=/*")
	require.Contains(t, logs.String(), "method=POST")
}

// writerFunc adapts a function to io.Writer.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestForwardKeepsEscapedSlashes: a path segment holding an escaped slash (a customer id with a
// "/", sent as %2F) reaches the service as the client wrote it, not split into two segments.
func TestForwardKeepsEscapedSlashes(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.RequestURI
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	app, _ := forwardApp(t, srv.URL, slog.New(slog.DiscardHandler))
	const uri = "/admin/v1/integrations/i1/customers/team%2Fada/usage?window=7"
	resp, err := app.Test(httptest.NewRequest("GET", uri, nil), 5_000)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, uri, <-got)
}

// TestBudgetBelowUpstreamWait: the longest request budget a deployment may configure ends before
// the gateway stops waiting for the service, so the service's answer is the one a client gets.
func TestBudgetBelowUpstreamWait(t *testing.T) {
	require.Less(t, config.MaxRequestBudget+2*time.Second, httpx.UpstreamTimeout)
}
