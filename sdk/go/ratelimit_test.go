package splathost

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestRateLimitedCallsAreRetried: a 429 RATE_LIMITED did nothing, so even an unsafe POST is sent
// again after the Retry-After; another 429 (a clone already running) is the answer.
func TestRateLimitedCallsAreRetried(t *testing.T) {
	var calls atomic.Int32
	code := "RATE_LIMITED"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, `{"status":"error","message":"too many requests","code":"`+code+`","policy":"integration","retryAfter":1}`)
			return
		}
		writeJSON(w, 200, `{"status":"success","integration":{"id":"x"}}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv, nil)
	if _, err := c.RotateIntegration(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls: the refused rotate is sent again", calls.Load())
	}
	calls.Store(0)
	code = CodeCloneInProgress
	_, err := c.RotateIntegration(context.Background(), "x")
	var e *APIError
	if !errors.As(err, &e) || e.Status != 429 || e.Code != CodeCloneInProgress || calls.Load() != 1 {
		t.Fatalf("err %v after %d calls", err, calls.Load())
	}
}
