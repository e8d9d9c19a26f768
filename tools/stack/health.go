package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// waitHealthy polls check until it succeeds, the child exits, the timeout passes or ctx ends.
// Every failure names the part and points at its log, because "timed out" alone sends people
// hunting through five log files.
func waitHealthy(ctx context.Context, part string, proc *process, logPath string, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 50 * time.Millisecond
	var lastErr error
	for {
		if proc != nil && proc.Exited() {
			return proc.exitError("during start-up")
		}
		attempt, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
		lastErr = check(attempt)
		cancelAttempt()
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s: start-up interrupted", part)
			}
			return fmt.Errorf("%s not healthy after %s: %v; see %s:\n%s", part, timeout, lastErr, logPath, logTail(logPath, 20))
		case <-time.After(delay):
		}
		if delay < 500*time.Millisecond {
			delay *= 2
		}
	}
}

// Expect200 sends req and returns the start of the answer (up to 4 KiB), failing unless the
// status is 200, with the server's message: how the readiness checks here and the bench's
// statements to an engine's HTTP interface read an answer.
func Expect200(req *http.Request) ([]byte, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("%s %s: status %d: %s", req.Method, req.URL, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// httpCheck returns a check that wants status 200 from url and, when wantBody is not empty, a
// body starting with it.
func httpCheck(url, wantBody string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		body, err := Expect200(req)
		if err != nil {
			return err
		}
		if wantBody != "" && !strings.HasPrefix(string(body), wantBody) {
			return fmt.Errorf("GET %s: unexpected body %q", url, body)
		}
		return nil
	}
}

// loopback is the only interface anything in the dev stack listens on.
const loopback = "127.0.0.1"

// hostPort formats a loopback address.
func hostPort(port int) string { return net.JoinHostPort(loopback, strconv.Itoa(port)) }

// httpURL formats a loopback base URL.
func httpURL(port int) string { return "http://" + hostPort(port) }
