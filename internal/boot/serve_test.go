package boot

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
)

// testRuntime is a Runtime as Init builds it, logging into buf, cancelled by the returned func.
func testRuntime(t *testing.T, buf *bytes.Buffer) (*Runtime, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.NewJSONHandler(buf, nil))
	return &Runtime{Ctx: ctx, Config: config.Config{ShutdownTimeout: 5 * time.Second}, Log: log, component: "test"}, cancel
}

// freeAddr is a loopback address nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitStatus polls url until it answers, and returns its status.
func waitStatus(t *testing.T, url string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return resp.StatusCode
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered: %v", url, err)
		}
	}
}

func TestServeLogsServesAndStopsOnTheSignal(t *testing.T) {
	var buf bytes.Buffer
	rt, cancel := testRuntime(t, &buf)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/x", func(c *fiber.Ctx) error { return c.SendStatus(http.StatusTeapot) })
	addr := freeAddr(t)
	done := make(chan struct{})
	go func() { defer close(done); rt.Serve(app, addr) }()
	if got := waitStatus(t, "http://"+addr+"/x"); got != http.StatusTeapot {
		t.Fatalf("status %d", got)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the signal context ended")
	}
	if !strings.Contains(buf.String(), `"msg":"listening","addr":"`+addr+`"`) {
		t.Fatalf("no listening line in %s", buf.String())
	}
	if strings.Contains(buf.String(), `"level":"ERROR"`) {
		t.Fatalf("a clean stop logged an error: %s", buf.String())
	}
}

func TestServeLogsAListenFailure(t *testing.T) {
	var buf bytes.Buffer
	rt, _ := testRuntime(t, &buf)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rt.Serve(fiber.New(fiber.Config{DisableStartupMessage: true}), ln.Addr().String()) // taken: returns at once
	if !strings.Contains(buf.String(), `"msg":"serve"`) {
		t.Fatalf("no serve error logged: %s", buf.String())
	}
}

func TestServeHealthAnswersChecks(t *testing.T) {
	var buf bytes.Buffer
	rt, cancel := testRuntime(t, &buf)
	defer cancel()
	addr := freeAddr(t)
	failing := errors.New("down")
	rt.ServeHealth(addr, map[string]httpx.Check{"store": func(context.Context) error { return failing }}, nil)
	if got := waitStatus(t, "http://"+addr+"/healthz"); got != http.StatusOK {
		t.Fatalf("/healthz %d", got)
	}
	if got := waitStatus(t, "http://"+addr+"/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with a failing check answered %d", got)
	}
}
