// Package metrics holds splathost's Prometheus metrics: one registry per process, served at
// /metrics by every binary (httpx.MountMetrics). The series are defined here, in one leaf
// package, so any layer can count without import cycles and every name is listed in one place.
package metrics

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry is this process's registry: the series below plus the Go runtime and process
// collectors. A private registry (not prometheus.DefaultRegisterer) keeps libraries from
// adding series nobody asked for.
var Registry = prometheus.NewRegistry()

var (
	// HTTPRequests counts answered requests by service, route template, method and status.
	HTTPRequests = counterVec("splathost_http_requests_total",
		"HTTP requests answered, by service, route template, method and status code.",
		"service", "route", "method", "status")
	// HTTPDuration is request latency by service, route template and method.
	HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "splathost_http_request_duration_seconds",
		Help:    "HTTP request latency, by service, route template and method.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"service", "route", "method"})
	// QuotaRejections counts requests refused by a quota, by dimension (storageBytes,
	// splatCount, cloning) and scope (customer, account, plan).
	QuotaRejections = counterVec("splathost_quota_rejections_total",
		"Requests refused by a quota or plan limit, by dimension and scope.",
		"dimension", "scope")
	// CloneJobs counts clone jobs by what happened to them: started, rejected (one already
	// running for the customer), succeeded, rolled_back.
	CloneJobs = counterVec("splathost_clone_jobs_total",
		"Clone jobs by state reached: started, rejected, succeeded, rolled_back.",
		"state")
	// ViewsAccepted counts view beacons accepted into the outbox.
	ViewsAccepted = counter("splathost_views_accepted_total",
		"View beacons accepted (written to the Postgres outbox).")
	// RenditionStarts counts the rendition workflows the dispatcher started (or found running),
	// and the starts that failed (the scene stays pending and the dispatcher backs off).
	RenditionStarts = counterVec("splathost_rendition_starts_total",
		"Rendition workflow starts by the dispatcher, by outcome: started (or already running), error.",
		"outcome")
	// ViewsIngested counts view events the streamer stored in ClickHouse.
	ViewsIngested = counter("splathost_views_ingested_total",
		"View events inserted into ClickHouse by the streamer.")
)

// counterVec is a counter series by labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// counter is a counter without labels.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		HTTPRequests, HTTPDuration, QuotaRejections, CloneJobs, ViewsAccepted, ViewsIngested, RenditionStarts)
}

// Gauge registers a gauge read at scrape time (a backlog counted in the database, say). A
// failing read reports the last good value rather than failing the scrape. A name already
// registered keeps its first reader (a process that runs the worker twice, as tests do).
func Gauge(name, help string, read func() (float64, error)) {
	var (
		mu   sync.Mutex // concurrent scrapes share last
		last float64
	)
	err := Registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
		v, err := read()
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			last = v
		}
		return last
	}))
	var dup prometheus.AlreadyRegisteredError
	if err != nil && !errors.As(err, &dup) {
		panic(err) // an invalid name: a programming error, found by any test that runs it
	}
}
