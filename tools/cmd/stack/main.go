// Command stack runs the splathost dev stack: Postgres, ClickHouse, versitygw, the Temporal
// server with its UI (the temporal-node binary, built once into the tools cache, so this
// runner links in seconds), the migrations and the product binaries, all on loopback with
// their data under one directory.
//
//	bin/stack --dir .dev                       # make dev: fixed ports, every service
//	bin/stack --dir $TMP --random-ports --services none --state-file $TMP/stack.json
//	                                           # integration tests: infrastructure only
//	bin/stack --dir .dev-cluster --cluster --replicas 2
//	                                           # make dev-cluster: every engine as a cluster
//
// It stays up until SIGINT or SIGTERM (a second one exits at once; the children then get their
// parent-death signal), or until its parent process goes away. A product binary, Postgres,
// ClickHouse, versitygw or a Temporal node that exits is restarted with backoff on the same
// data and ports (the state file gets its new pid). SIGUSR1 kills
// ClickHouse as a crash would and keeps it down, SIGUSR2 starts it again (failure tests).
//
// With a command after the flags it runs that command on the runner already serving --dir
// and exits (deploy/README.md, "Failing over the cluster shape's Postgres"):
//
//	bin/stack --dir .dev-cluster pg-promote    # fence the primary, promote the standby
//	bin/stack --dir .dev-cluster pg-rebuild    # rebuild the other server as its standby
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/tools/stack"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "stack:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts stack.Options
	opts.Ports = stack.DefaultPorts()
	var randomPorts bool
	var logLevel string

	fs := flag.NewFlagSet("stack", flag.ContinueOnError)
	fs.StringVar(&opts.Dir, "dir", ".dev", "data directory (created if missing; a second run reuses its data)")
	fs.StringVar(&opts.BinDir, "bin", "bin", "directory holding the product binaries")
	fs.StringVar(&opts.Services, "services", stack.ServicesSplit, "product processes to run: split, allinone or none")
	fs.BoolVar(&opts.Cluster, "cluster", false, "run every engine as a cluster on loopback: Postgres primary + hot standby, ClickHouse 2 shards x 2 replicas on ZooKeeper, two versitygw gateways, Temporal's roles as separate processes on Postgres (make dev-cluster)")
	fs.BoolVar(&opts.Demo, "demo", false, "also run the demo host page (bin/demo) once the gateway is healthy")
	// The product's own loader reads SPLATHOST_REPLICAS, so `SPLATHOST_REPLICAS=2 make dev`
	// scales every binary; a malformed value fails here, before anything starts.
	env, err := config.Load()
	if err != nil {
		return err
	}
	fs.IntVar(&opts.Replicas, "replicas", env.Replicas,
		"processes of each product binary with --services split ($SPLATHOST_REPLICAS); every gateway forwards to every replica")
	fs.IntVar(&opts.Gateways, "gateways", envInt("SPLATHOST_STACK_GATEWAYS", 1),
		"gateway processes to run with --services split ($SPLATHOST_STACK_GATEWAYS); the extra ones on free ports")
	fs.IntVar(&opts.Sessions, "sessions", envInt("SPLATHOST_STACK_SESSIONS", 1),
		"session service processes to run with --services split ($SPLATHOST_STACK_SESSIONS); gateway i forwards to session i only (not with --replicas)")
	fs.StringVar(&opts.StateFile, "state-file", "", "where to write the state JSON once healthy (default DIR/stack.json)")
	fs.StringVar(&opts.Bucket, "bucket", "splathost", "S3 bucket to create")
	fs.StringVar(&opts.Namespace, "namespace", "default", "Temporal namespace to register")
	fs.StringVar(&opts.TaskQueue, "task-queue", "splathost", "Temporal task queue the worker polls")
	fs.StringVar(&opts.VersityGW, "versitygw", stack.DefaultVersityGW(), "versitygw binary ($SPLATHOST_VERSITYGW)")
	fs.StringVar(&opts.TemporalNode, "temporal-node", stack.DefaultTemporalNode(), "temporal-node binary ($"+stack.TemporalNodeEnv+", else beside this runner)")
	fs.DurationVar(&opts.StartTimeout, "start-timeout", 60*time.Second, "how long each part may take to become healthy")
	fs.DurationVar(&opts.MigrateTimeout, "migrate-timeout", 5*time.Minute, "how long the migrations may take")
	fs.DurationVar(&opts.StopTimeout, "stop-timeout", 20*time.Second, "how long a store gets to stop before it is killed")
	fs.BoolVar(&randomPorts, "random-ports", false, "use free random loopback ports for every port not set by a flag")
	fs.StringVar(&logLevel, "log-level", "info", "runner log level: debug, info, warn or error")
	fields := opts.Ports.Fields()
	for _, f := range fields {
		fs.IntVar(f.Port, f.Flag, *f.Port, f.Label+" port")
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() == 1 && stack.IsControlCommand(fs.Arg(0)) {
		// A command for the runner already serving --dir (stack.Control).
		return stack.Control(opts.Dir, fs.Arg(0), os.Stdout)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s (commands for a running runner:\n%s)", strings.Join(fs.Args(), " "), stack.ControlUsage())
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	// A pinned topology asked for on the command line (a test's) wins over a SPLATHOST_REPLICAS
	// left in the shell.
	replicasFlag := false
	fs.Visit(func(f *flag.Flag) { replicasFlag = replicasFlag || f.Name == "replicas" })
	if !replicasFlag && (opts.Gateways > 1 || opts.Sessions > 1) {
		opts.Replicas = 1
	}

	if randomPorts {
		// Flags given explicitly win over random picks.
		explicit := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
		random, err := stack.RandomPorts()
		if err != nil {
			return err
		}
		randomFields := random.Fields()
		for i, f := range fields {
			if !explicit[f.Flag] {
				*f.Port = *randomFields[i].Port
			}
		}
	}

	ctx, cancel := signalContext(log)
	defer cancel()
	opts.CrashClickHouse, opts.StartClickHouse = signalChannel(syscall.SIGUSR1), signalChannel(syscall.SIGUSR2)
	return stack.Run(ctx, opts, log, os.Stdout)
}

// envInt is the integer in the environment variable name, or def when it is unset or not a
// positive integer.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// signalChannel turns each arrival of sig into a value on the returned channel (one pending at
// most: a request repeated before the first is handled changes nothing).
func signalChannel(sig os.Signal) <-chan struct{} {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, sig)
	out := make(chan struct{}, 1)
	go func() {
		for range sigs {
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out
}

// signalContext is cancelled by the first SIGINT or SIGTERM, or when the parent process exits
// (the test harness may die without signalling us). A second signal exits at once: the children
// then receive their parent-death signal, which still shuts the databases down cleanly.
func signalContext(log *slog.Logger) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		log.Info("signal received, stopping (again to force)", "signal", sig)
		cancel()
		<-sigs
		log.Warn("second signal: exiting without waiting")
		os.Exit(1)
	}()
	// Polling the parent pid works whoever the parent is; Pdeathsig on ourselves would depend
	// on which of the parent's threads happened to fork us.
	parent := os.Getppid()
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != parent {
					log.Info("parent process exited, stopping")
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}
