// Package stack runs the splathost dev stack as plain processes with its data under one
// directory: Postgres, ClickHouse, versitygw (S3), the Temporal server with its web UI (the
// temporal-node binary, tools/cmd/temporal-node),
// the product migrations and, optionally, the product binaries. `make dev` uses it for a
// long-running local stack; the integration-test harness uses it (services off, random ports) to
// get real infrastructure and reads the connection details from the state file.
package stack

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/stackstate"
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
	// TemporalNode is the temporal-node binary; DefaultTemporalNode() when empty.
	TemporalNode string
	// StartTimeout bounds each part's start-up; MigrateTimeout bounds the migrations.
	StartTimeout, MigrateTimeout time.Duration
	// StopTimeout is how long a child gets to exit after its stop signal before it is killed.
	StopTimeout time.Duration
	// Cluster runs the cluster shape (cluster.go): a Postgres standby, ClickHouse as shards of
	// replicas on ZooKeeper, two versitygw gateways over one store.
	Cluster bool
	// CrashClickHouse and StartClickHouse, when set, let the runner's owner take ClickHouse
	// away like a crash (SIGKILL) and keep it away (its supervisor does not restart it) until
	// asked to bring it back on the same data and ports, for failure tests of what depends on
	// it (the view streamer). The runner's SIGUSR1 and SIGUSR2.
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
	// cluster holds the cluster shape's other nodes (Options.Cluster); nil otherwise.
	cluster *clusterNodes

	state      State
	stateSaved bool
	stateMu    sync.Mutex // serialises state file writes (restarts) with Stop
	// engineList are the supervised engines once Start has succeeded; engineWG waits for their
	// supervisors.
	engineList []*engine
	engineWG   sync.WaitGroup
	stopOnce   sync.Once
	stopErr    error
	// stopping is closed when Stop begins; supMu orders it with the supervisor's restarts, so
	// no child is started after Stop has read the processes it stops.
	stopping chan struct{}
	supMu    sync.Mutex
	// control is the command socket (control.go); roleMu runs its commands one at a time and
	// guards the Postgres servers' roles (pgroles.go).
	control net.Listener
	roleMu  sync.Mutex
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
	if opts.TemporalNode == "" {
		opts.TemporalNode = DefaultTemporalNode()
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
		stopping: make(chan struct{}),
	}, nil
}

// Run starts the stack, prints the summary and keeps it up until ctx ends (a signal), then stops
// everything. An engine or a product binary that exits meanwhile is restarted with backoff
// (engines.go, supervise.go). It returns nil after a requested shutdown.
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
loop:
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			break loop
		case <-opts.CrashClickHouse:
			s.crashClickHouse()
		case <-opts.StartClickHouse:
			s.startClickHouse()
		}
	}
	err = s.Stop()
	if err == nil {
		log.Info("stopped")
	}
	return err
}
