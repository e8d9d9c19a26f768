// Package stackstate is the dev stack's state file (.dev/stack.json): written by the stack runner
// when every part is healthy, read by the test harness, the benchmarks and anyone scripting
// against `make dev`. One type, so writer and readers cannot drift apart.
package stackstate

import (
	"encoding/hex"
	"net/url"
	"strings"

	"github.com/splathost/splathost/internal/config"
)

// Process is one process of the running stack, listed so tools can find it (the benchmarks read
// each pid's RSS).
type Process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	URL  string `json:"url"`
}

// State is everything a client of the stack needs. The first six fields are fixed by the
// contract (spec/contract.md item 1).
type State struct {
	GatewayURL        string    `json:"gatewayUrl"`
	AdminToken        string    `json:"adminToken"`
	TemporalUIURL     string    `json:"temporalUiUrl"`
	ObjectStoreURL    string    `json:"objectStoreUrl"`
	PostgresURL       string    `json:"postgresUrl"`
	ClickHouseAddr    string    `json:"clickhouseAddr"`
	TemporalAddr      string    `json:"temporalAddr"`
	TemporalNamespace string    `json:"temporalNamespace"`
	TaskQueue         string    `json:"taskQueue"`
	ClickHouseHTTPURL string    `json:"clickhouseHttpUrl"`
	ClickHouseDB      string    `json:"clickhouseDb"`
	S3Bucket          string    `json:"s3Bucket"`
	S3Region          string    `json:"s3Region"`
	S3AccessKey       string    `json:"s3AccessKey"`
	S3SecretKey       string    `json:"s3SecretKey"`
	InternalSecret    string    `json:"internalSecret"`
	SessionKeys       string    `json:"sessionKeys"`
	WebhookKey        string    `json:"webhookKey"`
	Services          string    `json:"services"`
	LogDir            string    `json:"logDir"`
	ReadyMillis       int64     `json:"readyMillis"`
	Processes         []Process `json:"processes"`

	// DemoURL is the demo host page, when the runner started it (make dev does).
	DemoURL string `json:"demoUrl,omitempty"`
	// GatewayURLs are every gateway's base URL, gatewayUrl first, when the runner started more
	// than one (--gateways): each forwards to its own session service process (--sessions).
	GatewayURLs []string `json:"gatewayUrls,omitempty"`

	// Cluster is set by the cluster shape (bin/stack --cluster): every engine runs as more than
	// one node, each listed in Processes under its role's name. The fields above keep naming
	// the nodes the product uses (the Postgres primary, the first ClickHouse node and gateway).
	Cluster bool `json:"cluster,omitempty"`
	// PostgresStandbyURL is the streaming hot standby of PostgresURL (read-only, lagging by
	// the replication delay). The runner's failover commands move both: after `bin/stack
	// pg-promote` PostgresURL names the promoted server and this is empty until `pg-rebuild`
	// has made the old primary its standby (deploy/README.md).
	PostgresStandbyURL string `json:"postgresStandbyUrl,omitempty"`
	// ClickHouseCluster is the remote_servers cluster the analytics schema was created on;
	// ClickHouseAddrs are every node's native address, shard by shard (the product gets them
	// all as SPLATHOST_CLICKHOUSE_ADDR; ClickHouseAddr stays the first, one address).
	ClickHouseCluster string   `json:"clickhouseCluster,omitempty"`
	ClickHouseAddrs   []string `json:"clickhouseAddrs,omitempty"`
	// TemporalAddrs are every Temporal frontend, TemporalAddr first (the product gets them
	// all as SPLATHOST_TEMPORAL_ADDR and balances over them).
	TemporalAddrs []string `json:"temporalAddrs,omitempty"`
	// ObjectStoreURLs are every S3 gateway over the one store, ObjectStoreURL first.
	ObjectStoreURLs []string `json:"objectStoreUrls,omitempty"`
}

// Config turns the stack's state into the product's configuration.
func (s State) Config() config.Config {
	cfg, _ := config.Load()
	cfg.PostgresURL = s.PostgresURL
	// The standby, when the stack has one, as the runner gives its own product processes.
	cfg.PostgresReadURL = s.PostgresStandbyURL
	if s.PostgresStandbyURL != "" {
		// Both servers, the writable one chosen at each new connection: a promoted standby
		// takes over without the product being restarted or reconfigured.
		cfg.PostgresURL = FailoverURL(s.PostgresURL, s.PostgresStandbyURL)
	}
	cfg.ClickHouseAddr = s.ClickHouseAddr
	if s.ClickHouseCluster != "" {
		cfg.ClickHouseCluster = s.ClickHouseCluster
	}
	if len(s.ClickHouseAddrs) > 0 {
		// Every node, as the runner gives its own product processes (analytics.Open).
		cfg.ClickHouseAddr = strings.Join(s.ClickHouseAddrs, ",")
	}
	cfg.TemporalAddr = s.TemporalAddr
	if len(s.TemporalAddrs) > 0 {
		// Every frontend, as the runner gives its own product processes (temporalconn.Dial).
		cfg.TemporalAddr = strings.Join(s.TemporalAddrs, ",")
	}
	if s.TemporalNamespace != "" {
		cfg.TemporalNamespace = s.TemporalNamespace
	}
	if s.TaskQueue != "" {
		cfg.TaskQueue = s.TaskQueue
	}
	cfg.S3Endpoint = s.ObjectStoreURL
	if len(s.ObjectStoreURLs) > 1 {
		// The other gateways, as the runner gives its own product processes.
		var fallbacks []string
		for _, u := range s.ObjectStoreURLs[1:] {
			fallbacks = append(fallbacks, strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://"))
		}
		cfg.S3Fallbacks = strings.Join(fallbacks, ",")
	}
	cfg.S3Bucket = s.S3Bucket
	if s.S3Region != "" {
		cfg.S3Region = s.S3Region
	}
	cfg.S3AccessKey = s.S3AccessKey
	cfg.S3SecretKey = s.S3SecretKey
	cfg.AdminToken = s.AdminToken
	cfg.InternalSecret = s.InternalSecret
	if keys, err := config.ParseSessionKeys(s.SessionKeys); err == nil {
		cfg.SessionKeys = keys
	}
	if k, err := hex.DecodeString(s.WebhookKey); err == nil && len(k) == 32 {
		cfg.WebhookKey = k
	}
	// A stack's receivers (make dev, tests) are on this machine.
	cfg.WebhookAllowPrivate = true
	return cfg
}

// FailoverURL is a pgx connection string over a primary and its standbys: every server's
// host:port in the primary's URL, with target_session_attrs=read-write. pgx (like libpq) tries
// the hosts in order at each new connection and keeps the first that accepts writes, so once a
// standby is promoted (deploy/README.md, "Losing the Postgres primary") new connections reach it
// without a restart, and a fenced old primary that comes back read-only is passed over. A URL
// that does not parse is returned unchanged, for pgx to report.
func FailoverURL(primary string, standbys ...string) string {
	u, err := url.Parse(primary)
	if err != nil {
		return primary
	}
	hosts := []string{u.Host}
	for _, s := range standbys {
		if su, err := url.Parse(s); err == nil && su.Host != "" {
			hosts = append(hosts, su.Host)
		}
	}
	u.Host = strings.Join(hosts, ",")
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return u.String()
}
