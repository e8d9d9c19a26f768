// Command temporal-node runs Temporal server roles for the splathost dev stack, as a child
// process the stack runner (tools/cmd/stack) supervises. It links only the Temporal server, its
// UI server and the standard library, never product code, so `make` builds it once into the
// tools cache and product changes never relink it.
//
//	temporal-node --roles all --sqlite DIR/temporal.db --cluster-id ID --frontend-port 7233 ...
//	                               # make dev: every role in one process, static membership, + UI
//	temporal-node setup --postgres postgres://postgres@127.0.0.1:15432 --namespace default
//	                               # create the temporal and temporal_visibility databases,
//	                               # apply Temporal's schema, register the namespace
//	temporal-node --roles history --postgres URL --shards 8 --history-port P --membership-port M ...
//	                               # the cluster shape: one role per process, ringpop membership
//	                               # over the cluster_membership table
//
// The node logs JSON lines on stdout and, once every role has started, writes --ready-file.
// SIGTERM or SIGINT stops it cleanly.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"

	splathostconfig "github.com/splathost/splathost/internal/config"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "temporal-node:", err)
		os.Exit(1)
	}
}

// cli is the parsed command line: the node's options and what the process adds around them.
type cli struct {
	node      nodeOptions
	setup     bool
	uiPort    int
	uiFronts  string
	readyFile string
}

func parse(args []string) (cli, error) {
	var c cli
	if len(args) > 0 && args[0] == "setup" {
		c.setup, args = true, args[1:]
	}
	fs := flag.NewFlagSet("temporal-node", flag.ContinueOnError)
	roles := fs.String("roles", "all", "roles to run: all, or a comma list of frontend, history, matching, worker")
	var attrs string
	o := &c.node
	fs.StringVar(&o.sqlite, "sqlite", "", "SQLite database file (single-node stack; created on first start)")
	fs.StringVar(&o.postgres, "postgres", "", "Postgres server URL postgres://user[:password]@host:port (databases temporal and temporal_visibility)")
	fs.IntVar(&o.shards, "shards", 1, "history shards (fixed when the cluster is first created)")
	fs.StringVar(&o.clusterID, "cluster-id", "", "cluster id, stored on first start; the same on every start")
	fs.StringVar(&o.frontend, "frontend-addr", "", "frontend address the cluster metadata advertises")
	fs.StringVar(&o.namespace, "namespace", "", "namespace to register when missing (SQLite at start, Postgres by setup)")
	fs.StringVar(&attrs, "search-attributes", "", "comma list of custom Keyword search attributes the namespace gets")
	fs.DurationVar(&o.retention, "retention", 7*24*time.Hour, "closed workflow retention of a namespace registered here")
	fs.IntVar(&o.ports.Frontend, "frontend-port", 0, "frontend gRPC port")
	fs.IntVar(&o.ports.FrontendHTTP, "frontend-http-port", 0, "frontend HTTP API port")
	fs.IntVar(&o.ports.History, "history-port", 0, "history gRPC port")
	fs.IntVar(&o.ports.Matching, "matching-port", 0, "matching gRPC port")
	fs.IntVar(&o.ports.Worker, "worker-port", 0, "internal worker gRPC port")
	fs.IntVar(&o.ports.Membership, "membership-port", 0, "ringpop membership port (one role per process)")
	fs.IntVar(&c.uiPort, "ui-port", 0, "also serve the Temporal web UI on this port")
	fs.StringVar(&c.uiFronts, "ui-frontends", "", "comma list of frontend addresses the UI dials (default --frontend-addr)")
	fs.StringVar(&c.readyFile, "ready-file", "", "file written once every role has started")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	o.searchAttributes = splathostconfig.List(attrs)
	if c.setup {
		if o.postgres == "" {
			return c, errors.New("setup: --postgres is required")
		}
		return c, nil
	}
	var err error
	if o.roles, err = parseRoles(*roles); err != nil {
		return c, err
	}
	if c.uiFronts == "" {
		c.uiFronts = o.frontend
	}
	return c, o.validate()
}

func run(args []string) error {
	c, err := parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	serverLogger := temporalLogger{logger.With("component", "server")}
	if c.setup {
		return setupPostgres(c.node, serverLogger)
	}
	if c.readyFile != "" {
		_ = os.Remove(c.readyFile)
	}
	if c.node.sqlite != "" {
		if err := prepareSQLite(c.node, serverLogger); err != nil {
			return err
		}
	}
	server, err := newServer(c.node, serverLogger)
	if err != nil {
		return err
	}
	if err := server.Start(); err != nil {
		return fmt.Errorf("start %s: %w", strings.Join(c.node.roles, ","), err)
	}
	stop := func() {
		if err := server.Stop(); err != nil {
			logger.Error("stop", "error", err)
		}
	}
	if c.uiPort > 0 {
		ui, err := startUI(c.uiPort, c.uiFronts, c.node.namespace, logger)
		if err != nil {
			stop()
			return err
		}
		defer ui.Stop()
	}
	if c.readyFile != "" {
		if err := os.WriteFile(c.readyFile, []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil {
			stop()
			return err
		}
	}
	logger.Info("started", "roles", strings.Join(c.node.roles, ","))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	sig := <-sigs
	logger.Info("stopping", "signal", sig.String())
	stop()
	return nil
}

// newServer builds the server for the node's roles.
func newServer(o nodeOptions, logger temporalLogger) (temporal.Server, error) {
	conf, err := serverConfig(o)
	if err != nil {
		return nil, err
	}
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("claim mapper: %w", err)
	}
	opts := []temporal.ServerOption{
		temporal.WithConfig(conf),
		temporal.ForServices(o.roles),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                 8096,
			dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
			// Newly added search attributes are usable at once instead of after a cache refresh.
			dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		}),
	}
	if o.allRoles() {
		opts = append(opts, temporal.WithStaticHosts(o.staticHosts()))
	}
	server, err := temporal.NewServer(opts...)
	if err != nil {
		return nil, fmt.Errorf("build server: %w", err)
	}
	return server, nil
}
