package stack

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/filelock"
	"github.com/splathost/splathost/internal/migrate"
	"github.com/splathost/splathost/internal/stackstate"
	"github.com/splathost/splathost/internal/topology"
)

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
	s.temporal = newTemporal(o.Dir, o.TemporalNode, o.Ports, o.Namespace, s.log)
	if o.Cluster {
		if err := s.setupCluster(); err != nil {
			return err
		}
	}
	if s.cfg, err = s.productConfig(); err != nil {
		return err
	}

	// Missing installs fail before anything starts, not after a minute of start-up.
	_, chErr := findClickHouse()
	if err := errors.Join(s.pg.check(), chErr, s.s3.check(), checkTemporalNode(o.TemporalNode), checkServiceBinaries(o.Services, o.BinDir), s.checkDemoBinary()); err != nil {
		return err
	}
	// Servers orphaned by a killed runner would hold their ports; clear them before checking.
	if err := errors.Join(s.pg.clearStalePid(), s.ch.stopOrphan()); err != nil {
		return err
	}
	if o.Cluster {
		if err := s.clusterPrepare(); err != nil {
			return err
		}
	}
	if err := checkFree(s.portsInUse()); err != nil {
		return err
	}

	steps := []startStep{
		{"postgres", func(ctx context.Context) error { return s.pg.start(ctx, o.StartTimeout) }},
		{"clickhouse", func(ctx context.Context) error { return s.ch.start(ctx, o.StartTimeout) }},
		{"versitygw", func(ctx context.Context) error { return s.s3.start(ctx, o.StartTimeout) }},
	}
	if o.Cluster {
		steps = s.clusterSteps()
	}
	steps = append(steps, []startStep{
		{"temporal", func(ctx context.Context) error { return s.temporal.start(ctx, o.StartTimeout) }},
		{"migrations", s.migrate},
		{"services", s.startServices},
	}...)
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
	if err := s.serveControl(); err != nil {
		// The stack runs without it; only the failover commands need it.
		s.log.Warn("no control socket: `bin/stack COMMAND` will not reach this runner", "error", err)
	}
	return nil
}

// startStep is one part of the start-up: run returns once the part is healthy.
type startStep struct {
	name string
	run  func(context.Context) error
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
	// Every frontend: the product's Temporal client balances over them (worker.Dial), so
	// losing one frontend of the cluster shape is not an outage.
	cfg.TemporalAddr = strings.Join(s.temporal.frontends(), ",")
	cfg.TemporalNamespace = s.opts.Namespace
	cfg.TaskQueue = s.opts.TaskQueue
	cfg.ClickHouseAddr = s.ch.addr()
	if s.cluster != nil {
		// The migrator creates the schema's cluster variant; the services read the cluster
		// name from view_events' engine, so this is all they need too. They get every node,
		// dialled in order (analytics.Open), so losing clickhouse-1-1 is not an outage.
		cfg.ClickHouseCluster = ClickHouseCluster
		// Trending's reads go to the standby (docs/operations.md, "Standby reads").
		cfg.PostgresReadURL = s.cluster.standby.url()
		// Both Postgres servers, the writable one found at each new connection: after the
		// standby's promotion the services reach it without a restart (deploy/README.md).
		cfg.PostgresURL = stackstate.FailoverURL(s.pg.url(), s.cluster.standby.url())
		cfg.ClickHouseAddr = strings.Join(s.cluster.chAddrs(), ",")
		// versitygw-1 is the endpoint (browsers' uploads, signatures); the services' own S3
		// client dials versitygw-2 when it refuses.
		var fallbacks []string
		for _, g := range s.cluster.gateways {
			fallbacks = append(fallbacks, hostPort(g.port))
		}
		cfg.S3Fallbacks = strings.Join(fallbacks, ",")
	}
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

// lockDir takes an exclusive lock on the data directory so two runners never share one set of
// data files; it also makes it safe to treat any server found running on the data as an orphan.
func (s *Stack) lockDir() error {
	path := filepath.Join(s.opts.Dir, "stack.lock")
	f, err := filelock.TryLock(path, 0o644)
	if err != nil {
		return err
	}
	if f == nil {
		b, _ := os.ReadFile(path)
		holder := strings.TrimSpace(string(b))
		if holder == "" {
			holder = "unknown"
		}
		// The usual cause is a second `make dev`: say the stack is already up and how to stop it.
		return fmt.Errorf("another stack runner (pid %s) is using %s: the stack is already up (its addresses are in %s); stop it with Ctrl-C in its terminal or `kill %s`, or run a second one with another --dir and --random-ports",
			holder, s.opts.Dir, s.opts.StateFile, holder)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	s.lock = f
	return nil
}
