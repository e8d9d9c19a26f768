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
	HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "splathost_http_requests_total",
		Help: "HTTP requests answered, by service, route template, method and status code.",
	}, []string{"service", "route", "method", "status"})
	// HTTPDuration is request latency by service, route template and method.
	HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "splathost_http_request_duration_seconds",
		Help:    "HTTP request latency, by service, route template and method.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"service", "route", "method"})
	// QuotaRejections counts requests refused by a quota, by dimension (storageBytes,
	// splatCount, cloning) and scope (customer, account, plan).
	QuotaRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "splathost_quota_rejections_total",
		Help: "Requests refused by a quota or plan limit, by dimension and scope.",
	}, []string{"dimension", "scope"})
	// CloneJobs counts clone jobs by what happened to them: started, rejected (one already
	// running for the customer), succeeded, rolled_back.
	CloneJobs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "splathost_clone_jobs_total",
		Help: "Clone jobs by state reached: started, rejected, succeeded, rolled_back.",
	}, []string{"state"})
	// ViewsAccepted counts view beacons accepted into the outbox.
	ViewsAccepted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "splathost_views_accepted_total",
		Help: "View beacons accepted (written to the Postgres outbox).",
	})
	// RenditionStarts counts the rendition workflows the dispatcher started (or found running),
	// and the starts that failed (the scene stays pending and the dispatcher backs off).
	RenditionStarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "splathost_rendition_starts_total",
		Help: "Rendition workflow starts by the dispatcher, by outcome: started (or already running), error.",
	}, []string{"outcome"})
	// ViewsIngested counts view events the streamer stored in ClickHouse.
	ViewsIngested = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "splathost_views_ingested_total",
		Help: "View events inserted into ClickHouse by the streamer.",
	})
)

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
