// Package stack runs the splathost dev stack as plain processes with its data under one
// directory: Postgres, ClickHouse, versitygw (S3), an in-process Temporal server with its web UI,
// the product migrations and, optionally, the product binaries. `make dev` uses it for a
// long-running local stack; the integration-test harness uses it (services off, random ports) to
// get real infrastructure and reads the connection details from the state file.
package stack

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/migrate"
	"github.com/splathost/splathost/internal/stackstate"
	"github.com/splathost/splathost/internal/topology"
)

// Options configures a stack.
type Options struct {
	// Dir holds all data, logs, secrets and the state file; a second run on the same Dir keeps
	// the data.
	Dir string
	// BinDir holds the product binaries (gateway, user, scene, session, worker, splathost).
	BinDir string
	// Services is ServicesSplit, ServicesAllInOne or ServicesNone.
	Services string
	// Demo also starts the demo host page (BinDir/demo) once the services are healthy; it needs
	// a gateway, so it is ignored with ServicesNone.
	Demo bool
	// Replicas is how many processes of each product binary ServicesSplit runs (1 when zero),
	// every gateway forwarding to every replica of each service, in turn.
	Replicas int
	// Gateways and Sessions are how many gateway and session service processes ServicesSplit
	// runs (1 when zero), gateway i forwarding to session i only; not with Replicas. The
	// replicas listen on free loopback ports and the state file lists every gateway in
	// gatewayUrls (replicaDefs).
	Gateways, Sessions int
	// Ports are the loopback ports of every part.
	Ports Ports
	// StateFile is written once everything is healthy; Dir/stack.json when empty.
	StateFile string
	// Bucket is the S3 bucket the product stores assets in.
	Bucket string
	// Namespace and TaskQueue are the Temporal namespace and the worker's task queue.
	Namespace, TaskQueue string
	// VersityGW is the versitygw binary; DefaultVersityGW() when empty.
	VersityGW string
	// StartTimeout bounds each part's start-up; MigrateTimeout bounds the migrations.
	StartTimeout, MigrateTimeout time.Duration
	// StopTimeout is how long a child gets to exit after its stop signal before it is killed.
	StopTimeout time.Duration
	// CrashClickHouse and StartClickHouse, when set, let the runner's owner take ClickHouse
	// away like a crash (SIGKILL) and bring it back on the same data and ports, for failure
	// tests of what depends on it (the view streamer). The runner's SIGUSR1 and SIGUSR2.
	CrashClickHouse, StartClickHouse <-chan struct{}
}

// Process is one process of the running stack (see stackstate.Process).
type Process = stackstate.Process

// State is the content of the state file (see stackstate.State).
type State = stackstate.State

// Stack is a dev stack being started, running or stopped.
type Stack struct {
	opts    Options
	log     *slog.Logger
	logDir  string
	started time.Time

	lock    *os.File
	secrets Secrets
	cfg     config.Config

	pg       *postgres
	ch       *clickhouse
	s3       *objectStore
	temporal *temporalStack
	services []*service

	state      State
	stateSaved bool
	stateMu    sync.Mutex // serialises state file writes (restarts, ClickHouse) with Stop
	failed     chan error
	stopOnce   sync.Once
	stopErr    error
	// stopping is closed when Stop begins; supMu orders it with the supervisor's restarts, so
	// no child is started after Stop has read the processes it stops.
	stopping chan struct{}
	supMu    sync.Mutex
}

// New validates the options and resolves defaults; it starts nothing.
func New(opts Options, log *slog.Logger) (*Stack, error) {
	if opts.Dir == "" {
		return nil, errors.New("no data directory")
	}
	if _, err := serviceDefs(opts.Services, config.Config{}); err != nil {
		return nil, err
	}
	opts.Demo = opts.Demo && opts.Services != ServicesNone
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if opts.BinDir, err = filepath.Abs(opts.BinDir); err != nil {
		return nil, err
	}
	if opts.StateFile == "" {
		opts.StateFile = filepath.Join(dir, "stack.json")
	} else if opts.StateFile, err = filepath.Abs(opts.StateFile); err != nil {
		return nil, err
	}
	if opts.VersityGW == "" {
		opts.VersityGW = DefaultVersityGW()
	}
	defaults := []struct {
		v   *string
		def string
	}{{&opts.Bucket, "splathost"}, {&opts.Namespace, "default"}, {&opts.TaskQueue, "splathost"}}
	for _, d := range defaults {
		if *d.v == "" {
			*d.v = d.def
		}
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.MigrateTimeout <= 0 {
		opts.MigrateTimeout = 5 * time.Minute
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 20 * time.Second
	}
	return &Stack{
		opts:     opts,
		log:      log,
		logDir:   filepath.Join(dir, "logs"),
		failed:   make(chan error, 1),
		stopping: make(chan struct{}),
	}, nil
}

// Start brings every part up in dependency order, waiting for each to be healthy, then writes
// the state file. Call Stop afterwards whether or not Start succeeded: it stops what did start.
func (s *Stack) Start(ctx context.Context) error {
	s.started = time.Now()
	o := s.opts
	for _, d := range []string{o.Dir, s.logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := s.lockDir(); err != nil {
		return err
	}
	// A state file from a crashed run would tell clients the stack is up before it is.
	_ = os.Remove(o.StateFile)
	var err error
	if s.secrets, err = loadSecrets(filepath.Join(o.Dir, "secrets.json")); err != nil {
		return err
	}

	s.pg = newPostgres(o.Dir, o.Ports.Postgres, s.log)
	s.ch = newClickHouse(o.Dir, o.Ports.ClickHouseTCP, o.Ports.ClickHouseHTTP, s.log)
	s.s3 = newObjectStore(o.Dir, o.VersityGW, o.Ports.ObjectStore, o.Bucket, s.secrets, s.log)
	s.temporal = newTemporal(o.Dir, o.Ports, o.Namespace, s.log)
	if s.cfg, err = s.productConfig(); err != nil {
		return err
	}

	// Missing installs fail before anything starts, not after a minute of start-up.
	_, chErr := findClickHouse()
	if err := errors.Join(s.pg.check(), chErr, s.s3.check(), checkServiceBinaries(o.Services, o.BinDir), s.checkDemoBinary()); err != nil {
		return err
	}
	// Servers orphaned by a killed runner would hold their ports; clear them before checking.
	if err := errors.Join(s.pg.clearStalePid(), s.ch.stopOrphan()); err != nil {
		return err
	}
	if err := checkFree(s.portsInUse()); err != nil {
		return err
	}

	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"postgres", func(ctx context.Context) error { return s.pg.start(ctx, o.StartTimeout) }},
		{"clickhouse", func(ctx context.Context) error { return s.ch.start(ctx, o.StartTimeout) }},
		{"versitygw", func(ctx context.Context) error { return s.s3.start(ctx, o.StartTimeout) }},
		{"temporal", func(ctx context.Context) error { return s.temporal.start(ctx, o.StartTimeout) }},
		{"migrations", s.migrate},
		{"services", s.startServices},
	}
	for _, step := range steps {
		t0 := time.Now()
		if err := step.run(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: start-up interrupted", step.name)
		}
		s.log.Info("ready", "part", step.name, "took", time.Since(t0).Round(time.Millisecond))
	}

	s.state = s.buildState()
	b, err := json.MarshalIndent(s.state, "", "  ")
	if err != nil {
		return err
	}
	// 0600: the file carries the secrets.
	if err := writeFileAtomic(o.StateFile, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write state file: %w", err)
	}
	s.stateSaved = true
	s.watch()
	return nil
}

// migrate applies the product's Postgres and ClickHouse migrations.
func (s *Stack) migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.MigrateTimeout)
	defer cancel()
	if err := migrate.Run(ctx, s.cfg, s.log.With("part", "migrate")); err != nil {
		return fmt.Errorf("migrations failed: %w", err)
	}
	return nil
}

// startServices runs the product binaries of the chosen mode.
func (s *Stack) startServices(ctx context.Context) error {
	var err error
	var replicas []serviceDef
	if s.opts.Services == ServicesSplit {
		o := topology.Options{Replicas: s.opts.Replicas, Gateways: s.opts.Gateways, Sessions: s.opts.Sessions}
		if s.cfg, replicas, err = replicaDefs(s.cfg, o); err != nil {
			return err
		}
	}
	s.services, err = startServices(ctx, s.opts.Services, s.opts.BinDir, s.logDir, s.cfg, replicas, s.opts.StartTimeout)
	if err != nil || !s.opts.Demo {
		return err
	}
	demo, err := s.startDemo(ctx)
	if demo != nil {
		s.services = append(s.services, demo)
	}
	return err
}

// productConfig is the configuration the services and migrations get: the runner's own
// SPLATHOST_* environment for tuning knobs (log level, OTLP), with every address and secret
// taken from this stack.
func (s *Stack) productConfig() (config.Config, error) {
	cfg, err := config.Load()
	if err != nil {
		return config.Config{}, err
	}
	p := s.opts.Ports
	cfg.PostgresURL = s.pg.url()
	cfg.TemporalAddr = s.temporal.addr()
	cfg.TemporalNamespace = s.opts.Namespace
	cfg.TaskQueue = s.opts.TaskQueue
	cfg.ClickHouseAddr = s.ch.addr()
	cfg.S3Endpoint = s.s3.url()
	cfg.S3Region = s3Region
	cfg.S3AccessKey = s.secrets.S3AccessKey
	cfg.S3SecretKey = s.secrets.S3SecretKey
	cfg.S3Bucket = s.opts.Bucket
	cfg.AdminToken = s.secrets.AdminToken
	cfg.InternalSecret = s.secrets.InternalSecret
	if cfg.SessionKeys, err = config.ParseSessionKeys(s.secrets.SessionKeys); err != nil {
		return config.Config{}, fmt.Errorf("secrets: sessionKeys: %w", err)
	}
	if cfg.WebhookKey, err = hex.DecodeString(s.secrets.WebhookKey); err != nil || len(cfg.WebhookKey) != 32 {
		return config.Config{}, fmt.Errorf("secrets: webhookKey: want 64 hex characters")
	}
	// The dev stack's webhook receivers run on this machine (make dev, the tests).
	cfg.WebhookAllowPrivate = true
	cfg.GatewayAddr = hostPort(p.Gateway)
	cfg.UserAddr = hostPort(p.User)
	cfg.SceneAddr = hostPort(p.Scene)
	cfg.SessionAddr = hostPort(p.Session)
	cfg.UserURL = httpURL(p.User)
	cfg.SceneURL = httpURL(p.Scene)
	cfg.SessionURL = httpURL(p.Session)
	cfg.WorkerHealthAddr = hostPort(p.WorkerHealth)
	cfg.MediaHealthAddr = hostPort(p.MediaHealth)
	return cfg, nil
}

// portsInUse lists the ports this run will listen on.
func (s *Stack) portsInUse() []PortField {
	services := map[string][]string{
		ServicesSplit:    {"gateway-port", "user-port", "scene-port", "session-port", "worker-health-port", "media-health-port"},
		ServicesAllInOne: {"gateway-port"},
	}[s.opts.Services]
	skip := map[string]bool{}
	for _, f := range []string{"gateway-port", "user-port", "scene-port", "session-port", "worker-health-port", "media-health-port"} {
		skip[f] = true
	}
	for _, f := range services {
		skip[f] = false
	}
	skip["demo-port"] = !s.opts.Demo
	var out []PortField
	for _, f := range s.opts.Ports.Fields() {
		if !skip[f.Flag] {
			out = append(out, f)
		}
	}
	return out
}

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
		Processes: []Process{
			{Name: "postgres", PID: s.pg.proc.pid(), URL: s.pg.url()},
			{Name: "clickhouse", PID: s.ch.proc.pid(), URL: s.ch.httpURL()},
			{Name: "versitygw", PID: s.s3.proc.pid(), URL: s.s3.url()},
			{Name: "stack", PID: os.Getpid(), URL: s.temporal.uiURL()},
		},
	}
	for _, svc := range s.services {
		st.Processes = append(st.Processes, Process{Name: svc.def.name, PID: svc.proc.pid(), URL: "http://" + svc.def.readyAddr})
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

// Failed reports the first infrastructure child (Postgres, ClickHouse, versitygw) that exits on
// its own after start-up, with its log tail. Product binaries are restarted instead
// (supervise.go).
func (s *Stack) Failed() <-chan error { return s.failed }

// watch turns an unexpected exit of the infrastructure into an error on Failed and supervises
// the product binaries.
func (s *Stack) watch() {
	for _, p := range []*process{s.pg.proc, s.ch.proc, s.s3.proc} {
		s.watchProc(p)
	}
	for _, svc := range s.services {
		s.supervise(svc)
	}
}

// watchProc reports p's exit on Failed unless it was stopped on purpose.
func (s *Stack) watchProc(p *process) {
	go func() {
		<-p.done
		if !p.stopping.Load() {
			select {
			case s.failed <- p.exitError("unexpectedly"):
			default:
			}
		}
	}()
}

// crashClickHouse kills ClickHouse with SIGKILL, as a crash would, and waits for it to exit.
// The stack stays up; startClickHouse brings it back.
func (s *Stack) crashClickHouse() {
	p := s.ch.proc
	p.stopping.Store(true)
	_ = p.cmd.Process.Kill()
	<-p.done
	s.log.Warn("clickhouse killed on request", "pid", p.pid())
}

// startClickHouse starts ClickHouse again on the same data and ports (if it is not running) and
// rewrites the state file with its new pid once it answers.
func (s *Stack) startClickHouse(ctx context.Context) error {
	if !s.ch.proc.exited() {
		return nil
	}
	if err := s.ch.start(ctx, s.opts.StartTimeout); err != nil {
		return err
	}
	s.watchProc(s.ch.proc)
	s.log.Info("clickhouse started again on request", "pid", s.ch.proc.pid())
	return s.recordPID("clickhouse", s.ch.proc.pid())
}

// Stop shuts everything down in reverse dependency order: the services first, so they stop
// using the stores cleanly, then Temporal, versitygw, ClickHouse and Postgres. It removes the
// state file and is safe to call more than once.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		s.supMu.Lock()
		close(s.stopping)
		procs := make([]*process, len(s.services))
		for i, svc := range s.services {
			procs[i] = svc.proc
		}
		s.supMu.Unlock()
		s.stateMu.Lock()
		if s.stateSaved {
			_ = os.Remove(s.opts.StateFile)
		}
		s.stateMu.Unlock()
		var errs []error
		// Services stop in parallel: each has its own drain timeout.
		var wg sync.WaitGroup
		svcErrs := make([]error, len(procs))
		for i, p := range procs {
			wg.Go(func() { svcErrs[i] = p.stop(s.cfg.ShutdownTimeout + 5*time.Second) })
		}
		wg.Wait()
		errs = append(errs, svcErrs...)
		if s.temporal != nil {
			errs = append(errs, s.temporal.stop())
		}
		if s.s3 != nil {
			errs = append(errs, s.s3.stop(s.opts.StopTimeout))
		}
		if s.ch != nil {
			errs = append(errs, s.ch.stop(s.opts.StopTimeout))
		}
		if s.pg != nil {
			errs = append(errs, s.pg.stop(s.opts.StopTimeout))
		}
		if s.lock != nil {
			s.lock.Close() // releases the flock
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

// lockDir takes an exclusive lock on the data directory so two runners never share one set of
// data files; it also makes it safe to treat any server found running on the data as an orphan.
func (s *Stack) lockDir() error {
	path := filepath.Join(s.opts.Dir, "stack.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := io.ReadAll(f)
		f.Close()
		holder := strings.TrimSpace(string(b))
		if holder == "" {
			holder = "unknown"
		}
		return fmt.Errorf("another stack runner (pid %s) is using %s", holder, s.opts.Dir)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	s.lock = f
	return nil
}

// PrintSummary writes the human-readable start-up summary. It shows the admin token (needed to
// call the operator API) but never the internal secret or the S3 secret key.
func (s *Stack) PrintSummary(w io.Writer) {
	st := s.state
	var b strings.Builder
	fmt.Fprintf(&b, "\nsplathost dev stack ready in %.1fs (services: %s)\n", float64(st.ReadyMillis)/1000, st.Services)
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
	row("clickhouse", st.ClickHouseAddr+" (http "+st.ClickHouseHTTPURL+")")
	row("object store", st.ObjectStoreURL+" (bucket "+st.S3Bucket+")")
	row("admin token", st.AdminToken)
	row("state file", s.opts.StateFile)
	row("logs", st.LogDir)
	b.WriteString("  Ctrl-C stops everything.\n")
	io.WriteString(w, b.String())
}

// Run starts the stack, prints the summary and keeps it up until ctx ends (a signal) or a part of
// the infrastructure dies (product binaries that exit are restarted), then stops everything. It returns nil after a requested shutdown.
func Run(ctx context.Context, opts Options, log *slog.Logger, out io.Writer) error {
	s, err := New(opts, log)
	if err != nil {
		return err
	}
	if err := s.Start(ctx); err != nil {
		stopErr := s.Stop()
		if ctx.Err() != nil {
			log.Info("start-up interrupted; stopped")
			return stopErr
		}
		return errors.Join(err, stopErr)
	}
	s.PrintSummary(out)
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			break loop
		case runErr = <-s.Failed():
			log.Error("a process of the stack exited; shutting down")
			break loop
		case <-opts.CrashClickHouse:
			s.crashClickHouse()
		case <-opts.StartClickHouse:
			if err := s.startClickHouse(ctx); err != nil {
				runErr = fmt.Errorf("starting clickhouse again: %w", err)
				break loop
			}
		}
	}
	err = errors.Join(runErr, s.Stop())
	if err == nil {
		log.Info("stopped")
	}
	return err
}
