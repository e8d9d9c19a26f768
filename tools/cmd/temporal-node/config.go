package main

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"

	splathostconfig "github.com/splathost/splathost/internal/config"
)

// clusterName names the single local Temporal cluster.
const clusterName = "active"

// The databases a Postgres-backed node uses, created by `temporal-node setup`.
const (
	pgDatabase           = "temporal"
	pgVisibilityDatabase = "temporal_visibility"
)

// roleNames are the server roles a node can run, in the order an all-roles node lists them.
var roleNames = []string{"frontend", "history", "matching", "worker"}

// rolePorts are the loopback ports of a node. A node uses the ports of the roles it runs:
// the gRPC port of each, the frontend's HTTP API port, and (one role per process, on
// Postgres) the ringpop membership port the other nodes gossip with.
type rolePorts struct {
	Frontend, FrontendHTTP, History, Matching, Worker, Membership int
}

// nodeOptions is what the command line asks a node to run.
type nodeOptions struct {
	// roles are the roles this process hosts; every one of roleNames for "all".
	roles []string
	// sqlite is the database file of a single-node stack; postgres the server's URL
	// (postgres://user[:password]@host:port) of a multi-process one. Exactly one is set.
	sqlite, postgres string
	shards           int
	ports            rolePorts
	// clusterID is stored in the cluster metadata on first start and must never change.
	clusterID string
	// frontend is the frontend address the cluster metadata advertises.
	frontend string
	// namespace and searchAttributes are registered on a fresh SQLite database (Postgres:
	// by `temporal-node setup`).
	namespace        string
	searchAttributes []string
	retention        time.Duration
}

// allRoles reports whether the node hosts every role: one process, static membership.
func (o nodeOptions) allRoles() bool { return len(o.roles) == len(roleNames) }

// parseRoles turns the --roles value into role names: "all" or a comma list of roleNames.
func parseRoles(s string) ([]string, error) {
	if s == "all" {
		return slices.Clone(roleNames), nil
	}
	var out []string
	for _, r := range splathostconfig.List(s) {
		if !slices.Contains(roleNames, r) {
			return nil, fmt.Errorf("--roles: unknown role %q (want all or a list of frontend, history, matching, worker)", r)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--roles: no role given")
	}
	return out, nil
}

// rolePort is the gRPC port of one role.
func (p rolePorts) rolePort(role string) int {
	return map[string]int{"frontend": p.Frontend, "history": p.History, "matching": p.Matching, "worker": p.Worker}[role]
}

// staticHosts is the membership of an all-roles node: every role in this process, so no
// gossip port is needed.
func (o nodeOptions) staticHosts() map[primitives.ServiceName]static.Hosts {
	out := map[primitives.ServiceName]static.Hosts{}
	for _, r := range o.roles {
		out[primitives.ServiceName(r)] = static.SingleLocalHost(hostPort(o.ports.rolePort(r)))
	}
	return out
}

// sqlConfigs are the default and visibility stores' connection settings.
func (o nodeOptions) sqlConfigs() (def, vis *config.SQL, err error) {
	if o.sqlite != "" {
		c := sqliteConfig(o.sqlite, true)
		return c, c, nil
	}
	u, err := url.Parse(o.postgres)
	if err != nil || u.Scheme != "postgres" || u.Host == "" {
		return nil, nil, fmt.Errorf("--postgres: want postgres://user@host:port, got %q", o.postgres)
	}
	pw, _ := u.User.Password()
	// The URL's parameters (target_session_attrs=read-write with a host list, in the cluster
	// shape) reach the driver as they are.
	attrs := map[string]string{}
	for k, v := range u.Query() {
		attrs[k] = v[0]
	}
	pg := func(db string, conns int) *config.SQL {
		return &config.SQL{
			// pgx, not lib/pq: it takes a host list (ConnectAddr "h1:p1,h2:p2") and tries the
			// next host when one is down or read-only, so after the standby's promotion the
			// nodes find the new primary as the product does, without being restarted.
			PluginName: postgresql.PluginNamePGX, DatabaseName: db,
			ConnectAddr: u.Host, ConnectProtocol: "tcp", ConnectAttributes: attrs,
			User: u.User.Username(), Password: pw,
			// Six nodes share the stack's Postgres (max_connections 200) with the product:
			// a few connections each is plenty for a dev cluster.
			MaxConns: conns, MaxIdleConns: conns, MaxConnLifetime: time.Hour,
		}
	}
	return pg(pgDatabase, 8), pg(pgVisibilityDatabase, 3), nil
}

// sqliteConfig is the single-node database file's connection settings. The schema is built
// with a rollback journal (wal false: one file, safe to rename into place); the server runs on
// write-ahead logging with synchronous=NORMAL, so a commit does not wait for an fsync of a
// journal (only an OS crash can cost the last commits, fine for a dev server) and readers (the
// UI, visibility queries) run beside the one writer, hence a few connections.
func sqliteConfig(path string, wal bool) *config.SQL {
	c := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: path, ConnectAttributes: map[string]string{"mode": "rwc"}}
	if wal {
		c.ConnectAttributes["journal_mode"] = "wal"
		c.ConnectAttributes["synchronous"] = "normal"
		c.ConnectAttributes["busy_timeout"] = "10000"
		c.MaxConns, c.MaxIdleConns = 4, 4
	}
	return c
}

// serverConfig renders the node's server configuration: the roles it runs with their ports,
// the persistence, one local cluster. On Postgres each role's process gossips on its own
// membership port and finds the others through the cluster_membership table (ringpop).
func serverConfig(o nodeOptions) (*config.Config, error) {
	def, vis, err := o.sqlConfigs()
	if err != nil {
		return nil, err
	}
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = loopback
	conf.Persistence.DefaultStore = "default"
	conf.Persistence.VisibilityStore = "visibility"
	conf.Persistence.NumHistoryShards = int32(o.shards)
	conf.Persistence.DataStores = map[string]config.DataStore{"default": {SQL: def}, "visibility": {SQL: vis}}
	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             o.frontend,
				ClusterID:              o.clusterID,
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{}
	// Every role is listed, the ones of other processes empty: membership tracks only the
	// services the config names, and finds the others' addresses in their gossip labels.
	for _, r := range roleNames {
		var s config.Service
		if !slices.Contains(o.roles, r) {
			conf.Services[r] = s
			continue
		}
		s.RPC.GRPCPort = o.ports.rolePort(r)
		s.RPC.BindOnIP = loopback
		if r == "frontend" {
			s.RPC.HTTPPort = o.ports.FrontendHTTP
		}
		if !o.allRoles() {
			s.RPC.MembershipPort = o.ports.Membership
		}
		conf.Services[r] = s
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	if o.allRoles() {
		// The internal worker dials the frontend in its own process.
		conf.PublicClient.HostPort = hostPort(o.ports.Frontend)
	}
	// Otherwise left empty: the internal worker finds the frontends through membership.
	return &conf, nil
}

// validate checks the options a node needs, with the flag to fix in each message.
func (o nodeOptions) validate() error {
	if (o.sqlite == "") == (o.postgres == "") {
		return fmt.Errorf("give exactly one of --sqlite FILE and --postgres URL")
	}
	if o.shards < 1 {
		return fmt.Errorf("--shards: want at least 1")
	}
	if o.clusterID == "" {
		return fmt.Errorf("--cluster-id: required (keep it the same across restarts)")
	}
	if o.frontend == "" {
		return fmt.Errorf("--frontend-addr: required")
	}
	for _, r := range o.roles {
		if o.ports.rolePort(r) <= 0 {
			return fmt.Errorf("--%s-port: required for role %s", r, r)
		}
	}
	if slices.Contains(o.roles, "frontend") && o.ports.FrontendHTTP <= 0 {
		return fmt.Errorf("--frontend-http-port: required for role frontend")
	}
	if !o.allRoles() && o.ports.Membership <= 0 {
		return fmt.Errorf("--membership-port: required when a process runs some roles only (ringpop gossip)")
	}
	return nil
}

// loopback is the only interface the dev stack listens on.
const loopback = "127.0.0.1"

func hostPort(port int) string { return net.JoinHostPort(loopback, strconv.Itoa(port)) }
