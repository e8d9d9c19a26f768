package splathost

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// putObject is PutObject that reports every chunk read to sent, negatively for the bytes of
// an attempt that failed, so progress never counts a byte twice.
func (c *Client) putObject(ctx context.Context, uploadURL, contentType string, size int64,
	open func() (io.ReadCloser, error), sent func(int64)) error {
	_, err := c.put(ctx, uploadURL, size, map[string]string{"Content-Type": contentType, "Cache-Control": CacheControl}, open, sent)
	return err
}

// put sends size bytes to a signed URL with the headers its signature demands, retried like
// any idempotent request, and returns the store's answer headers (a part's ETag). Progress goes
// to sent as putObject describes.
func (c *Client) put(ctx context.Context, uploadURL string, size int64, headers map[string]string,
	open func() (io.ReadCloser, error), sent func(int64)) (http.Header, error) {
	var answer http.Header
	err := c.retry.run(ctx, true, c.jitter, func() (bool, time.Duration, error) {
		body, err := open()
		if err != nil {
			return false, 0, err
		}
		defer body.Close()
		counted := &countingReader{r: body, sent: sent}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, uploadURL, counted)
		if err != nil {
			return false, 0, err
		}
		req.ContentLength = size
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			counted.undo()
			return true, 0, err
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode/100 == 2 {
			answer = resp.Header
			return false, 0, nil
		}
		counted.undo()
		// The store answers in its own XML, not the service's envelope.
		err = &APIError{Status: resp.StatusCode, Message: "upload PUT refused: " + http.StatusText(resp.StatusCode), Body: msg}
		return resp.StatusCode >= 500, retryAfter(resp.Header), err
	})
	return answer, err
}

// countingReader reports what it reads to sent.
type countingReader struct {
	r    io.Reader
	sent func(int64)
	n    int64
}

// Read implements io.Reader, reporting what passes through.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && c.sent != nil {
		c.n += int64(n)
		c.sent(int64(n))
	}
	return n, err
}

// undo takes back what a failed attempt reported.
func (c *countingReader) undo() {
	if c.n > 0 && c.sent != nil {
		c.sent(-c.n)
	}
	c.n = 0
}

// eachParallel runs fn on every item with at most workers at once. The first error cancels the
// context of the others and stops feeding new items; it is what eachParallel returns (or the
// cause of ctx ending first).
func eachParallel[T any](ctx context.Context, workers int, items []T, fn func(context.Context, T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan T)
	var wg sync.WaitGroup
	for range min(workers, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range work {
				if err := fn(ctx, item); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
feed:
	for _, item := range items {
		select {
		case work <- item:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

// tracker sums the progress of concurrent PUTs and reports it one call at a time.
type tracker struct {
	mu     sync.Mutex
	report func(Progress)
	p      Progress
}

func newTracker(report func(Progress), bytes int64, files int) *tracker {
	return newTrackerAt(report, bytes, files, 0)
}

// newTrackerAt is newTracker for an upload that resumes with done bytes already stored: its
// first report says so.
func newTrackerAt(report func(Progress), bytes int64, files int, done int64) *tracker {
	t := &tracker{report: report, p: Progress{BytesTotal: bytes, FilesTotal: files, BytesDone: done}}
	t.emit(0, 0)
	return t
}

func (t *tracker) sent(n int64) { t.emit(n, 0) }

func (t *tracker) fileDone() { t.emit(0, 1) }

func (t *tracker) emit(bytes int64, files int) {
	if t.report == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.BytesDone += bytes
	t.p.FilesDone += files
	t.report(t.p)
}
