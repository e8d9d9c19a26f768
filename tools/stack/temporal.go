package stack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"
)

// SearchAttributes are the custom Keyword search attributes the workflows set, so operators can
// find a clone or retention workflow by business key in the Temporal UI.
var SearchAttributes = []string{"integrationId", "externalUserId", "splatId", "sourceSplatId", "renditionPhase", "webhookId", "webhookEvent"}

// namespaceRetention is how long closed workflow histories stay visible in the UI.
const namespaceRetention = 7 * 24 * time.Hour

// clusterName names the single local Temporal cluster.
const clusterName = "active"

// temporalStack is a Temporal server and its web UI running inside the runner process, on a
// SQLite file, the way the temporal CLI's dev server does it. Linking the server here keeps the
// only heavy dev dependency out of the product module and needs no extra binary.
type temporalStack struct {
	dir       string // DIR/temporal
	logPath   string
	ports     Ports
	namespace string
	log       *slog.Logger

	logFile *os.File
	server  temporal.Server
	ui      *uiserver.Server
	client  client.Client
}

func newTemporal(dir string, ports Ports, namespace string, log *slog.Logger) *temporalStack {
	return &temporalStack{
		dir:       filepath.Join(dir, "temporal"),
		logPath:   filepath.Join(dir, "logs", "temporal.log"),
		ports:     ports,
		namespace: namespace,
		log:       log.With("part", "temporal"),
	}
}

// addr is the frontend gRPC address clients dial.
func (t *temporalStack) addr() string { return hostPort(t.ports.TemporalFrontend) }

// uiURL is the web UI.
func (t *temporalStack) uiURL() string { return httpURL(t.ports.TemporalUI) }

// start opens (or creates) the database, starts the server and the UI, then waits until the
// frontend answers health checks, the custom search attributes exist and the UI serves pages.
func (t *temporalStack) start(ctx context.Context, timeout time.Duration) error {
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	var err error
	t.logFile, err = os.OpenFile(t.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("temporal: open log: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(t.logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))

	sqlConf, err := t.prepareDatabase()
	if err != nil {
		return err
	}
	clusterID, err := t.clusterID()
	if err != nil {
		return err
	}
	conf := t.serverConfig(sqlConf, clusterID)
	serverLogger := temporalLogger{logger.With("component", "server")}
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return fmt.Errorf("temporal: authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, serverLogger)
	if err != nil {
		return fmt.Errorf("temporal: claim mapper: %w", err)
	}
	host := func(port int) static.Hosts { return static.SingleLocalHost(hostPort(port)) }
	t.server, err = temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		// Static membership: one process hosts every role, so there is no ringpop gossip port.
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: host(t.ports.TemporalFrontend),
			primitives.HistoryService:  host(t.ports.TemporalHistory),
			primitives.MatchingService: host(t.ports.TemporalMatching),
			primitives.WorkerService:   host(t.ports.TemporalWorker),
		}),
		temporal.WithLogger(serverLogger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                 8096,
			dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
			// Newly added search attributes are usable at once instead of after a cache refresh.
			dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		}),
	)
	if err != nil {
		return fmt.Errorf("temporal: build server: %w; see %s", err, t.logPath)
	}
	if err := t.server.Start(); err != nil {
		return fmt.Errorf("temporal: start server: %w; see %s:\n%s", err, t.logPath, logTail(t.logPath, 20))
	}

	t.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                loopback,
		Port:                t.ports.TemporalUI,
		TemporalGRPCAddress: t.addr(),
		EnableUI:            true,
		DefaultNamespace:    t.namespace,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true, // no outbound calls from a dev stack
	}))
	go func() {
		// Start blocks until Stop. The free-port check before start-up is what keeps its
		// log.Fatal on a busy port from ever running.
		if err := t.ui.Start(); err != nil {
			logger.Error("ui server stopped", "error", err)
		}
	}()

	err = waitHealthy(ctx, "temporal", nil, t.logPath, timeout, func(ctx context.Context) error {
		if t.client == nil {
			c, err := client.DialContext(ctx, client.Options{
				HostPort:  t.addr(),
				Namespace: t.namespace,
				Logger:    sdklog.NewStructuredLogger(logger.With("component", "sdk-client")),
			})
			if err != nil {
				return err
			}
			t.client = c
		}
		if _, err := t.client.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return err
		}
		return t.ensureSearchAttributes(ctx)
	})
	if err != nil {
		return err
	}
	return waitHealthy(ctx, "temporal ui", nil, t.logPath, timeout, httpCheck(t.uiURL()+"/", ""))
}

// prepareDatabase creates the SQLite schema on first run and registers the namespace.
func (t *temporalStack) prepareDatabase() (*config.SQL, error) {
	dbPath := filepath.Join(t.dir, "temporal.db")
	// The schema is built in a side file with a rollback journal (one file, safe to rename
	// into place); the server then runs on write-ahead logging.
	sqlConf := func(path string, wal bool) *config.SQL {
		c := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: path, ConnectAttributes: map[string]string{"mode": "rwc"}}
		if wal {
			// Write-ahead log with synchronous=NORMAL: a commit no longer waits for an fsync of a
			// rollback journal, which held every workflow start, timer and activity result of
			// the dev stack to the disk's sync latency. A process crash loses nothing; only the
			// OS crashing can cost the last commits, acceptable for a development server. WAL
			// lets readers (the UI, visibility queries) run beside the one writer, hence a few
			// connections.
			c.ConnectAttributes["journal_mode"] = "wal"
			c.ConnectAttributes["synchronous"] = "normal"
			c.ConnectAttributes["busy_timeout"] = "10000"
			c.MaxConns, c.MaxIdleConns = 4, 4
		}
		return c
	}
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		// Build the schema in a side file and rename it into place: a run interrupted half way
		// must not leave a database that later runs take for complete.
		tmp := dbPath + ".init"
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			_ = os.Remove(tmp + suffix)
		}
		t.log.Info("creating temporal database", "path", dbPath)
		if err := sqliteschema.SetupSchema(sqlConf(tmp, false)); err != nil {
			return nil, fmt.Errorf("temporal: create schema in %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, dbPath); err != nil {
			return nil, fmt.Errorf("temporal: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("temporal: %w", err)
	}
	conf := sqlConf(dbPath, true)

	searchAttrs := make(map[string]enumspb.IndexedValueType, len(SearchAttributes))
	for _, name := range SearchAttributes {
		searchAttrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, t.namespace, false, searchAttrs)
	if err != nil {
		return nil, fmt.Errorf("temporal: namespace config: %w", err)
	}
	ns.Detail.Config.Retention = durationpb.New(namespaceRetention)
	// A no-op when the namespace exists, so a restart keeps its settings.
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return nil, fmt.Errorf("temporal: register namespace %s: %w", t.namespace, err)
	}
	return conf, nil
}

// clusterID returns the cluster's id, generated on first run and stored beside the database:
// the id is persisted in the cluster metadata, so it must not change between restarts.
func (t *temporalStack) clusterID() (string, error) {
	path := filepath.Join(t.dir, "cluster-id")
	b, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), nil
	}
	id := uuid.NewString()
	if err := writeFileAtomic(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("temporal: %w", err)
	}
	return id, nil
}

// serverConfig is the single-node configuration of the temporal CLI's dev server.
func (t *temporalStack) serverConfig(sqlConf *config.SQL, clusterID string) *config.Config {
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = loopback
	conf.Persistence.DefaultStore = "sqlite-default"
	conf.Persistence.VisibilityStore = "sqlite-default"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite-default": {SQL: sqlConf}}
	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             t.addr(),
				HTTPAddress:            hostPort(t.ports.TemporalHTTP),
				ClusterID:              clusterID,
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	service := func(grpcPort, httpPort int) config.Service {
		var s config.Service
		s.RPC.GRPCPort = grpcPort
		s.RPC.HTTPPort = httpPort
		s.RPC.BindOnIP = loopback
		return s
	}
	conf.Services = map[string]config.Service{
		"frontend": service(t.ports.TemporalFrontend, t.ports.TemporalHTTP),
		"history":  service(t.ports.TemporalHistory, 0),
		"matching": service(t.ports.TemporalMatching, 0),
		"worker":   service(t.ports.TemporalWorker, 0),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = t.addr()
	return &conf
}

// ensureSearchAttributes registers the custom search attributes that are missing. A namespace
// created by this runner already has them; this covers databases from older runs.
func (t *temporalStack) ensureSearchAttributes(ctx context.Context) error {
	ops := t.client.OperatorService()
	resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: t.namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range SearchAttributes {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        t.namespace,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}

// stop closes the client, the UI and the server, in that order so nothing dials a stopped server.
func (t *temporalStack) stop() error {
	if t.client != nil {
		t.client.Close()
	}
	if t.ui != nil {
		t.ui.Stop()
	}
	var err error
	if t.server != nil {
		if err = t.server.Stop(); err != nil {
			err = fmt.Errorf("temporal: stop: %w", err)
		}
	}
	if t.logFile != nil {
		t.logFile.Close()
	}
	return err
}
