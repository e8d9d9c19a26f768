// Command bench runs splathost's benchmark (`make bench`) and prints one table of measures with
// their goals: the gateway's authenticated GET /api/v1/external-user against a bare Fiber + pgx
// server on the same Postgres (services in one process and apart), the dev stack's ready time
// cold and warm, and the idle memory of every stack process. A missed goal is reported, not
// failed: the exit status is non-zero only when a measure could not be taken or something
// broke (failed requests, a stack that did not stop cleanly).
//
// Usage, from the repository root after `make build`:
//
//	bin/bench [--concurrency 32] [--warmup 1s] [--duration 5s] [--rounds 3] [--gateway-only] [--scale-only [--scale-cpu 0.25]]
//	          [--json] [--json-file bin/bench.json] [--keep]
//
// `bin/bench bare-server --pg URL --addr HOST:PORT --pool 16` is the bare server itself, which
// the benchmark runs as a separate process. `bin/bench chaos-report [FILE]` prints the results
// of the fault and abuse suite (`make chaos`), which the markdown report also appends.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/tools/bench"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "bare-server" {
		err = bareServer(os.Args[2:])
	} else if len(os.Args) > 1 && os.Args[1] == "chaos-report" {
		err = chaosReport(os.Args[2:])
	} else {
		var broken bool
		broken, err = run(os.Args[1:])
		if err == nil && broken {
			os.Exit(1)
		}
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run parses the flags, runs the benchmark and prints the report. broken says whether the
// report holds a failure.
func run(args []string) (broken bool, err error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var (
		o         bench.Options
		asJSON    bool
		jsonFile  string
		logLevel  string
		runnerBin string
	)
	fs.StringVar(&o.BinDir, "bin", "bin", "directory of the product binaries and the stack runner")
	fs.StringVar(&runnerBin, "stack", "", "stack runner binary (default BIN/stack)")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "load generator connections, one request in flight each")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "load run before each measured window, not counted")
	fs.DurationVar(&o.Duration, "duration", 5*time.Second, "measured window of each load run")
	fs.Int64Var(&o.MaxRequests, "max-requests", 5_000_000, "upper bound on the requests of one load run")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "timeout of each request")
	fs.IntVar(&o.Rounds, "rounds", 3, "alternated gateway/bare rounds of each comparison; the median round counts")
	fs.BoolVar(&o.GatewayOnly, "gateway-only", false, "run only the gateway comparisons (customer read, scene read, viewer mint), split and allinone")
	fs.StringVar(&o.ProfileDir, "profile", "", "write CPU and allocation profiles of the product processes under each gateway comparison's load to this directory")
	fs.StringVar(&jsonFile, "json-file", "bin/bench.json", "also write the report as JSON to this file (empty: do not)")
	fs.IntVar(&o.PoolSize, "pool", 16, "pgxpool size of the bare server (the product's is 16)")
	fs.DurationVar(&o.Idle, "idle", 10*time.Second, "how long a fresh stack idles before its memory is read (its processes settle: the worker trims what boot left mapped)")
	fs.DurationVar(&o.ReadyTimeout, "ready-timeout", 3*time.Minute, "bound on each stack's start-up")
	fs.DurationVar(&o.StopTimeout, "stop-timeout", time.Minute, "bound on each stack's shutdown before it is killed")
	fs.IntVar(&o.ArchiveScenes, "archive-scenes", bench.DefaultArchiveScenes, "committed scenes the suspending PUT archives (setup commits them first)")
	fs.StringVar(&o.TempDir, "tmp", "", "parent of the temporary data directory (default the system's)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the data directory and its logs")
	fs.BoolVar(&o.RoomsOnly, "rooms-only", false, "run only the multiplayer room measures (split, 2 gateways, 2 sessions)")
	fs.BoolVar(&o.MultipartOnly, "multipart-only", false, "run only the multipart upload measure (one PUT vs parts of a 256 MiB file)")
	fs.BoolVar(&o.WebhooksOnly, "webhooks-only", false, "run only the webhook delivery measures (allinone)")
	fs.BoolVar(&o.RenditionsOnly, "renditions-only", false, "run only the rendition measures (no stack)")
	fs.BoolVar(&o.IdempotencyOnly, "idempotency-only", false, "run only the idempotent commit measure (with and without an Idempotency-Key, allinone)")
	fs.BoolVar(&o.TrendingOnly, "trending-only", false, "run only the trending measure (10 M view events, allinone)")
	fs.BoolVar(&o.ScaleoutOnly, "scaleout-only", false, "run only the scale-out measure (split, 1 against 2 of each binary, two stacks at once)")
	fs.BoolVar(&o.ScaleOnly, "scale-only", false, "run only the tier scale measures on the cluster shape: 2 gateways vs 1 and 2 scene services vs 1 in one run, capped and uncapped, and the CPU per request of each process")
	fs.Float64Var(&o.TierCPU, "scale-cpu", bench.DefaultTierCPU, "CPU quota in cores of each capped process of -scale-only (cgroup; needs root)")
	fs.BoolVar(&o.TTFFOnly, "ttff-only", false, "run only the viewer's time to first frame, upload against rendition (split, Chromium)")
	fs.BoolVar(&o.LanesOnly, "lanes-only", false, "run only the rendition lanes measure: a small scene's time to ready alone and beside a 1 M conversion (split)")
	fs.BoolVar(&o.RateLimitOnly, "ratelimit-only", false, "run only the rate limiter's cost: hot paths with the limiter on against off (split)")
	fs.BoolVar(&o.CloneOnly, "clone-only", false, "run only the clone job measures (allinone)")
	fs.BoolVar(&o.PurgeOnly, "purge-only", false, "run only the scene purge measure: p50 and p99 of 100 clone-then-delete cycles' purges (allinone)")
	fs.BoolVar(&o.LODCommitOnly, "lodcommit-only", false, "run only the LOD commit measure: 2 000- and 20 000-file folders against raw copies, another tenant's reads meanwhile (allinone)")
	fs.BoolVar(&o.MemoryOnly, "memory-only", false, "run only the idle memory measure (split)")
	fs.Func("rendition-sizes", "comma-separated Gaussian counts of the rendition scenes (default 20000,1000000,3000000)", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("want positive integers, got %q", f)
			}
			o.RenditionSizes = append(o.RenditionSizes, n)
		}
		return nil
	})
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON instead of a markdown table")
	fs.StringVar(&logLevel, "log-level", "info", "progress log level on stderr: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.Rounds < 1 {
		return false, errors.New("--rounds must be positive")
	}
	if o.Concurrency < 1 || o.Duration <= 0 || o.Warmup < 0 || o.PoolSize < 1 || o.MaxRequests < 1 || o.Timeout <= 0 || o.ArchiveScenes < 1 {
		return false, errors.New("--concurrency, --duration, --pool, --max-requests, --timeout and --archive-scenes must be positive, --warmup not negative")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return false, fmt.Errorf("--log-level: %w", err)
	}
	o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return false, err
	}
	if runnerBin == "" {
		runnerBin = filepath.Join(o.BinDir, "stack")
	}
	if o.Runner, err = filepath.Abs(runnerBin); err != nil {
		return false, err
	}
	if _, err := os.Stat(o.Runner); err != nil {
		return false, fmt.Errorf("stack runner %s not found: build it first (make build)", o.Runner)
	}
	// The bare server is this same binary, started again with the bare-server subcommand.
	if o.Exe, err = os.Executable(); err != nil {
		return false, err
	}

	if o.ProfileDir != "" {
		// The stack's processes inherit the environment: this makes them serve /debug/pprof.
		if err := os.Setenv(config.PprofEnv, "1"); err != nil {
			return false, err
		}
	}
	ctx, stop := signalContext(o.Log)
	defer stop()
	rep := bench.Run(ctx, o)
	if asJSON {
		err = rep.WriteJSON(os.Stdout)
	} else {
		err = rep.WriteMarkdown(os.Stdout)
	}
	if err == nil && jsonFile != "" {
		err = writeJSONFile(rep, jsonFile)
	}
	if err == nil && !asJSON {
		// The figures of the last `make chaos`, when there are any, belong to the same report.
		_, err = bench.WriteChaosReport(os.Stdout, bench.DefaultChaosResults)
	}
	if err != nil {
		return true, err
	}
	if ctx.Err() != nil {
		return true, errors.New("interrupted")
	}
	return rep.Broken(), nil
}

// chaosReport is the chaos-report subcommand: it prints the fault and abuse suite's results
// (`make chaos` writes them) and fails when a case failed.
func chaosReport(args []string) error {
	path := bench.DefaultChaosResults
	if len(args) > 0 {
		path = args[0]
	}
	failed, err := bench.WriteChaosReport(os.Stdout, path)
	if err == nil && failed > 0 {
		err = fmt.Errorf("%d chaos cases failed", failed)
	}
	return err
}

// bareServer is the bare-server subcommand.
func bareServer(args []string) error {
	fs := flag.NewFlagSet("bench bare-server", flag.ContinueOnError)
	var o bench.BareServerOptions
	fs.StringVar(&o.PostgresURL, "pg", "", "Postgres URL of the product database")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:0", "listen address (port 0 picks one and prints it)")
	fs.IntVar(&o.PoolSize, "pool", 16, "pgxpool size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.PostgresURL == "" || o.PoolSize < 1 {
		return errors.New("bare-server: --pg is required and --pool must be positive")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signalContext(log)
	defer stop()
	return bench.RunBareServer(ctx, o, os.Stdout)
}

// signalContext is cancelled by the first SIGINT or SIGTERM, so the benchmark still stops its
// stacks and removes its data; a second signal exits at once (the children then get their
// parent-death signals, and the stack runner still stops its servers in order).
func signalContext(log *slog.Logger) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-sigs:
			log.Warn("signal received, stopping (again to force)", "signal", sig)
			cancel()
		case <-ctx.Done():
			return
		}
		<-sigs
		log.Warn("second signal: exiting without cleaning up")
		os.Exit(130)
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}

// writeJSONFile writes the report as JSON to path, creating its directory, so a run leaves a
// file a script can compare with the next run's while the table goes to the terminal.
func writeJSONFile(rep bench.Report, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
