package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// LoadOptions configures one closed-loop load run.
type LoadOptions struct {
	// URL is the full loopback URL to GET.
	URL string
	// Addrs, when set, are the host:port the connections are opened to, in turn (several gateways
	// behind a connection-level balancer); URL's host otherwise.
	Addrs []string
	// Headers are sent with every request.
	Headers map[string]string
	// Concurrency is the number of workers, each with one keep-alive connection and one
	// request in flight.
	Concurrency int
	// Warmup is run and discarded before the measured Duration.
	Warmup, Duration time.Duration
	// MaxRequests bounds the requests of the whole run (warm-up included), so a server that
	// answers implausibly fast cannot keep the loops spinning without end.
	MaxRequests int64
	// Timeout bounds each request.
	Timeout time.Duration
	// Request is the method, body and success status; the zero value is a GET answered 200.
	Request Request
	// Targets, when set, spread the workers over several requests: worker i sends the path
	// and headers of Targets[i % len(Targets)] to URL's host instead of URL and Headers, as
	// the clients of several integrations would.
	Targets []Target
}

// Target is one path with its headers (LoadOptions.Targets).
type Target struct {
	Path    string
	Headers map[string]string
}

// Request is what each load request sends and which status counts as a success.
type Request struct {
	// Method is GET when empty; Body, when set, is sent as application/json.
	Method string
	Body   []byte
	// Status is the success status; 200 when zero.
	Status int
	// Headers, when set, replace the tenant's key headers (a session bearer, for example).
	Headers map[string]string
}

// headers are the request's headers: Headers, or else the tenant's.
func (r Request) headers(t Tenant) map[string]string {
	if r.Headers == nil {
		return t.Headers()
	}
	h := make(map[string]string, len(r.Headers)+1)
	for k, v := range r.Headers {
		h[k] = v
	}
	return h
}

func (r Request) method() string {
	if r.Method == "" {
		return fasthttp.MethodGet
	}
	return r.Method
}

func (r Request) status() int {
	if r.Status == 0 {
		return fasthttp.StatusOK
	}
	return r.Status
}

// LoadResult is what one load run measured. Only responses completed inside the measured window
// count; OK counts the 200s alone.
type LoadResult struct {
	// OK counts the 200 responses, Non200 the other responses, Errors the requests that got no
	// response at all (refused, reset, timed out).
	OK, Non200, Errors int64
	// Statuses counts the non-200 responses by status code.
	Statuses map[int]int64
	// FirstError describes the first failure, for the report.
	FirstError string
	// Window is the measured time; RPS is OK / Window.
	Window time.Duration
	RPS    float64
	// P50 and P99 are latency percentiles of the 200 responses.
	P50, P99 time.Duration
	// Capped is set when a worker stopped at the request cap before the window ended.
	Capped bool
	// Accepted counts every success of the run, warm-up and late answers included: what the
	// server acknowledged, for measures that check nothing acknowledged was lost.
	Accepted int64
}

// Failures is the number of measured requests that did not get a 200.
func (r LoadResult) Failures() int64 { return r.Non200 + r.Errors }

// Summary is a short human description: latencies and failures.
func (r LoadResult) Summary() string {
	s := fmt.Sprintf("p50 %s p99 %s", fmtLatency(r.P50), fmtLatency(r.P99))
	if f := r.Failures(); f > 0 {
		codes := make([]string, 0, len(r.Statuses))
		for code, n := range r.Statuses {
			codes = append(codes, fmt.Sprintf("%d×%d", n, code))
		}
		sort.Strings(codes)
		s += fmt.Sprintf(", %d failed (%d transport errors", f, r.Errors)
		if len(codes) > 0 {
			s += "; statuses " + strings.Join(codes, " ")
		}
		s += ")"
		if r.FirstError != "" {
			s += ": " + r.FirstError
		}
	}
	if r.Capped {
		s += ", stopped at the request cap"
	}
	return s
}

func fmtLatency(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// workerResult is one worker's tally, merged after the run so the hot loop shares nothing.
type workerResult struct {
	ok, non200, errors int64
	statuses           map[int]int64
	firstErr           error
	latencies          []time.Duration
	capped             bool
	accepted           int64
}

// RunLoad drives o.Request (GET by default) at o.URL from o.Concurrency workers for o.Warmup +
// o.Duration and reports the measured window. It returns an error only when the run cannot happen at all;
// failed requests are counted in the result.
func RunLoad(ctx context.Context, o LoadOptions) (LoadResult, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return LoadResult{}, err
	}
	if u.Scheme != "http" {
		return LoadResult{}, fmt.Errorf("load target %s: only plain http is supported", o.URL)
	}
	// The measures compare servers on this machine; a remote target would measure the network.
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return LoadResult{}, fmt.Errorf("load target %s is not a loopback address", o.URL)
	}
	if o.Concurrency < 1 || o.Duration <= 0 || o.MaxRequests < 1 {
		return LoadResult{}, errors.New("load: concurrency, duration and the request cap must be positive")
	}
	hc := &fasthttp.HostClient{
		Addr:                     cmp.Or(strings.Join(o.Addrs, ","), u.Host),
		MaxConns:                 o.Concurrency,
		ReadTimeout:              o.Timeout,
		WriteTimeout:             o.Timeout,
		MaxIdleConnDuration:      time.Minute,
		MaxConnWaitTimeout:       o.Timeout,
		NoDefaultUserAgentHeader: true,
	}
	defer hc.CloseIdleConnections()

	start := time.Now()
	measureFrom := start.Add(o.Warmup)
	measureTo := measureFrom.Add(o.Duration)
	perWorker := max(1, o.MaxRequests/int64(o.Concurrency))
	results := make([]workerResult, o.Concurrency)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			wo := o
			if len(o.Targets) > 0 {
				t := o.Targets[i%len(o.Targets)]
				wo.URL, wo.Headers = u.Scheme+"://"+u.Host+t.Path, t.Headers
			}
			results[i] = worker(ctx, hc, wo, measureFrom, measureTo, perWorker)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return LoadResult{}, err
	}

	res := LoadResult{Statuses: map[int]int64{}, Window: o.Duration}
	var lat []time.Duration
	for _, w := range results {
		res.OK += w.ok
		res.Non200 += w.non200
		res.Errors += w.errors
		for code, n := range w.statuses {
			res.Statuses[code] += n
		}
		if w.firstErr != nil && res.FirstError == "" {
			res.FirstError = w.firstErr.Error()
		}
		res.Capped = res.Capped || w.capped
		res.Accepted += w.accepted
		lat = append(lat, w.latencies...)
	}
	// A worker that hit the cap stopped early: the rate is then over the time actually used.
	if res.Capped {
		if used := time.Since(measureFrom); used > 0 && used < o.Duration {
			res.Window = used
		}
	}
	res.RPS = float64(res.OK) / res.Window.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return res, nil
}

// worker runs one closed loop: send, wait for the answer, tally it if it completed inside the
// measured window, repeat until the window closes or the cap is reached.
func worker(ctx context.Context, hc *fasthttp.HostClient, o LoadOptions, from, to time.Time, limit int64) workerResult {
	w := workerResult{statuses: map[int]int64{}}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(o.URL)
	req.Header.SetMethod(o.Request.method())
	if o.Request.Body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(o.Request.Body)
	}
	want := o.Request.status()
	for k, v := range o.Headers {
		req.Header.Set(k, v)
	}
	for n := int64(0); ; n++ {
		if n >= limit {
			w.capped = true
			return w
		}
		if ctx.Err() != nil {
			return w
		}
		t0 := time.Now()
		if t0.After(to) {
			return w
		}
		err := hc.Do(req, resp)
		now := time.Now()
		if err == nil && resp.StatusCode() == want {
			w.accepted++
		}
		if now.Before(from) || now.After(to) {
			// Warm-up, or an answer that arrived after the window closed.
			if err != nil {
				time.Sleep(5 * time.Millisecond) // a refusing server must not turn this into a spin
			}
			continue
		}
		switch {
		case err != nil:
			w.errors++
			if w.firstErr == nil {
				w.firstErr = err
			}
			time.Sleep(5 * time.Millisecond)
		case resp.StatusCode() == want:
			w.ok++
			w.latencies = append(w.latencies, now.Sub(t0))
		default:
			w.non200++
			w.statuses[resp.StatusCode()]++
			if w.firstErr == nil {
				body := resp.Body()
				if len(body) > 200 {
					body = body[:200]
				}
				w.firstErr = fmt.Errorf("status %d: %s", resp.StatusCode(), body)
			}
		}
	}
}
