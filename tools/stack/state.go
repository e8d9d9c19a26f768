package stack

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// buildState assembles the state file content.
func (s *Stack) buildState() State {
	st := State{
		GatewayURL:        httpURL(s.opts.Ports.Gateway),
		AdminToken:        s.secrets.AdminToken,
		TemporalUIURL:     s.temporal.uiURL(),
		ObjectStoreURL:    s.s3.url(),
		PostgresURL:       s.pg.url(),
		ClickHouseAddr:    s.ch.addr(),
		TemporalAddr:      s.temporal.addr(),
		TemporalNamespace: s.opts.Namespace,
		TaskQueue:         s.opts.TaskQueue,
		ClickHouseHTTPURL: s.ch.httpURL(),
		ClickHouseDB:      s.cfg.ClickHouseDB,
		S3Bucket:          s.opts.Bucket,
		S3Region:          s3Region,
		S3AccessKey:       s.secrets.S3AccessKey,
		S3SecretKey:       s.secrets.S3SecretKey,
		InternalSecret:    s.secrets.InternalSecret,
		SessionKeys:       s.secrets.SessionKeys,
		WebhookKey:        s.secrets.WebhookKey,
		Services:          s.opts.Services,
		LogDir:            s.logDir,
		ReadyMillis:       time.Since(s.started).Milliseconds(),
	}
	// The engines in start order (the cluster shape's every node, Temporal's included), then
	// the runner itself.
	for _, e := range s.engines() {
		st.Processes = append(st.Processes, Process{Name: e.nameNow(), PID: e.proc().Pid(), URL: e.url})
	}
	st.Processes = append(st.Processes, Process{Name: "stack", PID: os.Getpid(), URL: "file://" + s.opts.StateFile})
	if c := s.cluster; c != nil {
		st.Cluster = true
		st.PostgresStandbyURL = c.standby.url()
		st.ClickHouseCluster = ClickHouseCluster
		st.ClickHouseAddrs = c.chAddrs()
		st.TemporalAddrs = s.temporal.frontends()
		st.ObjectStoreURLs = []string{s.s3.url()}
		for _, g := range c.gateways {
			st.ObjectStoreURLs = append(st.ObjectStoreURLs, g.url())
		}
	}
	for _, svc := range s.services {
		st.Processes = append(st.Processes, Process{Name: svc.def.name, PID: svc.proc.Pid(), URL: "http://" + svc.def.readyAddr})
		if svc.def.bin == "gateway" {
			if st.GatewayURLs == nil {
				st.GatewayURLs = []string{st.GatewayURL}
			}
			st.GatewayURLs = append(st.GatewayURLs, "http://"+svc.def.readyAddr)
		}
	}
	if s.opts.Demo {
		st.DemoURL = httpURL(s.opts.Ports.Demo)
	}
	return st
}

// State returns what the state file holds; valid after a successful Start.
func (s *Stack) State() State { return s.state }

// StateFile is the path of the state file.
func (s *Stack) StateFile() string { return s.opts.StateFile }

// PrintSummary writes the human-readable start-up summary. It shows the admin token (needed to
// call the operator API) but never the internal secret or the S3 secret key.
func (s *Stack) PrintSummary(w io.Writer) {
	st := s.state
	var b strings.Builder
	fmt.Fprintf(&b, "\nsplathost dev stack ready in %.1fs (services: %s)\n", float64(st.ReadyMillis)/1000, st.Services)
	if since, ok := sinceSetupBegan(); ok {
		fmt.Fprintf(&b, "  %.1fs after `make` began (set-up timeline above)\n", since.Seconds())
	}
	row := func(k, v string) { fmt.Fprintf(&b, "  %-14s %s\n", k, v) }
	if st.Services != ServicesNone {
		row("gateway", st.GatewayURL)
		for _, u := range st.GatewayURLs[min(1, len(st.GatewayURLs)):] {
			row("gateway", u+" (another gateway process, same stack)")
		}
	}
	if st.DemoURL != "" {
		row("demo host", st.DemoURL+" (viewer and editor embeds on another origin)")
	}
	row("temporal ui", st.TemporalUIURL)
	row("temporal", st.TemporalAddr+" (namespace "+st.TemporalNamespace+", task queue "+st.TaskQueue+")")
	row("postgres", st.PostgresURL)
	if st.PostgresStandbyURL != "" {
		row("pg standby", st.PostgresStandbyURL+" (hot standby, read-only)")
	}
	row("clickhouse", st.ClickHouseAddr+" (http "+st.ClickHouseHTTPURL+")")
	if st.ClickHouseCluster != "" {
		row("ch cluster", fmt.Sprintf("%s: %d shards x %d replicas %s", st.ClickHouseCluster, clusterShards, clusterReplicas, strings.Join(st.ClickHouseAddrs, " ")))
	}
	row("object store", st.ObjectStoreURL+" (bucket "+st.S3Bucket+")")
	for _, u := range st.ObjectStoreURLs[min(1, len(st.ObjectStoreURLs)):] {
		row("object store", u+" (another gateway, same store)")
	}
	row("admin token", st.AdminToken)
	row("state file", s.opts.StateFile)
	row("logs", st.LogDir)
	b.WriteString("  Ctrl-C stops everything.\n")
	io.WriteString(w, b.String())
}

// sinceSetupBegan is the time since make dev began its set-up, which tools/phase records in
// SPLATHOST_SETUP_ORIGIN (Unix seconds), so the summary tells a newcomer the whole wait.
func sinceSetupBegan() (time.Duration, bool) {
	v, err := strconv.ParseFloat(os.Getenv("SPLATHOST_SETUP_ORIGIN"), 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	return time.Since(time.Unix(0, int64(v*1e9))), true
}
