// Package config is the one configuration loader of splathost: every binary reads its settings
// from SPLATHOST_* environment variables, with defaults that match `make dev`.
package config

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config holds every setting of every binary. A binary reads only the fields it needs, which
// keeps one loader and one set of names across the gateway, the services and the worker.
type Config struct {
	// PostgresURL is the pgx connection string of the product database.
	PostgresURL string
	// PostgresReadURL, when set, is a hot standby of PostgresURL that serves the reads which
	// promise no read-your-writes (trending's eligibility and backfill; docs/operations.md).
	// Empty: every read goes to the primary.
	PostgresReadURL string
	// PostgresReadMaxLag is how far the standby may fall behind the primary before those reads
	// go back to the primary: trending promises a view within 10 s, and the streamer and
	// ClickHouse already take most of that.
	PostgresReadMaxLag time.Duration
	// TemporalAddr is the host:port of the Temporal frontend, or a comma list of frontends
	// the client balances over (a cluster without a load balancer in front).
	TemporalAddr string
	// TemporalNamespace is the namespace the worker and clients use.
	TemporalNamespace string
	// TaskQueue is the Temporal task queue the worker polls.
	TaskQueue string
	// ClickHouseAddr is the host:port of ClickHouse's native protocol.
	ClickHouseAddr string
	// ClickHouseDB is the analytics database name.
	ClickHouseDB string
	// ClickHouseCluster, when set, is the ClickHouse cluster (remote_servers) the migrator
	// creates the analytics schema on: Replicated tables on every shard with Distributed tables
	// over them (deploy/README.md). Empty: plain tables on one server.
	ClickHouseCluster string
	// ClickHouseDDLStallAfter is how long an ON CLUSTER task may stay unfinished by a node
	// before the worker reports the node's DDL queue as stalled (the metric
	// splathost_clickhouse_ddl_stalled_hosts and /readyz's details; deploy/README.md).
	ClickHouseDDLStallAfter time.Duration
	// S3Endpoint is the object store URL (versitygw locally, any S3 in production).
	S3Endpoint string
	// S3Fallbacks are other gateways of the same store (host:port, comma-separated): the
	// service's S3 client dials them in order when S3Endpoint's address refuses a connection,
	// still addressing (and signing for) S3Endpoint. Browsers' presigned uploads go to
	// S3Endpoint only.
	S3Fallbacks string
	// S3Region is the signing region.
	S3Region string
	// S3AccessKey and S3SecretKey are the object store credentials.
	S3AccessKey, S3SecretKey string
	// S3Bucket holds every scene asset.
	S3Bucket string
	// AssetBaseURL is the base of the asset URLs the upload answers give (fileUrl, manifestUrl)
	// and the scene records store: an object's URL is AssetBaseURL + "/" + key. It names an
	// object, it is not a public read URL (the bucket is private); scene answers rewrite it to
	// PublicURL + "/assets/…". Defaults to the object store's path-style bucket URL, the form
	// every stored record already has.
	AssetBaseURL string
	// PublicURL is the origin clients reach the gateway at (scheme://host[:port]); the asset
	// URLs of scene answers (splatUrl, imageUrl) start with it. Defaults to http:// plus
	// GatewayAddr.
	PublicURL string
	// AdminToken authorizes the operator API (Authorization: Bearer <token>).
	AdminToken string
	// InternalSecret signs the caller identity the gateway forwards to a service in another
	// process; services reject requests whose identity header does not verify.
	InternalSecret string
	// SessionKeys are the HS256 keys of embed session tokens, from SPLATHOST_SESSION_KEYS
	// ("kid:secret,kid:secret"): the first signs new tokens, every one verifies, so a key can be
	// rotated by putting the new one first and keeping the old one until its tokens expired
	// (15 minutes).
	SessionKeys []SessionKey
	// GatewayAddr is the gateway's (or the all-in-one binary's) listen address.
	GatewayAddr string
	// UserAddr, SceneAddr and SessionAddr are the listen addresses of the service binaries.
	UserAddr, SceneAddr, SessionAddr string
	// UserURL, SceneURL and SessionURL are where a split gateway forwards to: one URL, or the
	// URLs of a service's replicas separated by commas, which the gateway takes in turn and
	// fails over between.
	UserURL, SceneURL, SessionURL string
	// Replicas is how many processes of each product binary (gateway, user, scene, session,
	// worker, media-worker) the dev stack runner starts (`SPLATHOST_REPLICAS=2 make dev`); every
	// gateway forwards to every replica of each service. The product binaries ignore it.
	Replicas int
	// WorkerHealthAddr serves the worker's /healthz and /readyz.
	WorkerHealthAddr string
	// OTLPEndpoint enables OpenTelemetry trace export over OTLP/HTTP when set (host:port).
	OTLPEndpoint string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// BodyLimit is the largest request body the gateway accepts, in bytes.
	BodyLimit int
	// ShutdownTimeout bounds graceful shutdown.
	ShutdownTimeout time.Duration
	// RequestBudget is how long a request that changes something may work before its store
	// and database calls are cut off and its transaction rolled back (httpx.Deadline): shorter
	// than the gateway's wait for a service (httpx.UpstreamTimeout), so every answer is final.
	RequestBudget time.Duration
	// CloneWait is how long POST /api/v1/splats/{id}/clone waits for the job before it answers
	// 202 with a job to poll.
	CloneWait time.Duration
	// CloneAbandonAfter is how long a clone job runs without a poll before it is abandoned and
	// rolled back.
	CloneAbandonAfter time.Duration
	// CloneConcurrency is how many objects one clone job copies at once.
	CloneConcurrency int
	// WorkerSchedules makes the worker keep the Temporal schedules (orphan sweep, re-drives)
	// in place, pointed at its task queue. A worker that serves another task queue (a test's,
	// say) sets it false and leaves the product's schedules alone.
	WorkerSchedules bool
	// MediaTaskQueue is the task queue of the rendition workflows and their conversions, which
	// the media worker polls: conversion load scales apart from the API's worker.
	MediaTaskQueue string
	// MediaHealthAddr serves the media worker's /healthz and /readyz.
	MediaHealthAddr string
	// SplatTransform is the path of @playcanvas/splat-transform's CLI (bin/cli.mjs); empty finds
	// the pinned copy that `make deps` installs under media/node_modules.
	SplatTransform string
	// Node is the node binary that runs it (Node >= 22, splat-transform's engines); empty finds
	// the pinned Node 22 `make deps` installs under media/node-runtime, else node from PATH.
	Node string
	// RenditionTimeout bounds one conversion (the converter is killed at it and the rendition
	// fails); RenditionMaxMemory bounds the converter's resident memory in bytes.
	RenditionTimeout   time.Duration
	RenditionMaxMemory int
	// RenditionLODMin is the Gaussian count from which a rendition is a Streamed SOG with
	// levels of detail (contract item 15: 1 000 000).
	RenditionLODMin int
	// RenditionConcurrency is how many conversions one media worker runs at once.
	RenditionConcurrency int
	// RenditionMinBytes skips the rendition of uploads smaller than this (0: every scene gets
	// one). The test harness raises it so that the many tiny scenes other tests commit do not
	// queue conversions; the rendition tests upload scenes above it.
	RenditionMinBytes int
	// RenditionWindow is how many renditions a media task queue's dispatcher keeps in flight
	// (0: twice RenditionConcurrency plus two); another integration's scene waits behind at
	// most that many.
	RenditionWindow int
	// RenditionSmallBytes is the upload size up to which a scene converts in the small lane:
	// small scenes have conversion slots and a dispatch window of their own, so a thumbnail-size
	// scene never queues behind a large scan's conversion (docs/guides/renditions.md).
	RenditionSmallBytes int64
	// RenditionSmallConcurrency is how many small-lane conversions one media worker runs at
	// once, beside its RenditionConcurrency large ones.
	RenditionSmallConcurrency int
	// WebhookKey seals webhook signing secrets at rest (AES-256-GCM): 32 bytes from
	// SPLATHOST_WEBHOOK_KEY (64 hex characters). Empty derives one from InternalSecret
	// (WebhookSealKey), so a deployment without it still works; set it to rotate the two apart.
	WebhookKey []byte
	// WebhookAllowPrivate lets webhook URLs target loopback, private and link-local addresses
	// (and plain http): `make dev` and the test harness, whose receivers run on 127.0.0.1.
	// Production leaves it false, and every delivery re-checks the address it connects to.
	WebhookAllowPrivate bool
	// WebhookConcurrency is how many deliveries one endpoint receives at once, deployment-wide:
	// a slow receiver holds at most this many delivery slots and delays nobody else.
	WebhookConcurrency int
	// WebhookIntegrationConcurrency is how many deliveries one integration has in flight at once,
	// deployment-wide, over all its endpoints: an integration with many slow receivers holds at
	// most this many delivery slots, workers and database connections, so other integrations'
	// deliveries never queue behind its backlog.
	WebhookIntegrationConcurrency int
	// Pprof also serves Go's profiles at /debug/pprof/ next to /metrics (behind the same guard):
	// how the benchmark finds where a request's time goes. Off by default: a profile costs the
	// process CPU while it runs.
	Pprof bool
	// RateLimit are the gateway's rate limits and the embed beacons' bounds (ratelimit.go).
	RateLimit RateLimits
}

// Load reads the environment. It returns an error naming every malformed variable rather than
// silently falling back, so a typo in production configuration is caught at start.
func Load() (Config, error) {
	l := loader{}
	c := Config{
		PostgresURL:                   l.str("SPLATHOST_POSTGRES_URL", "postgres://postgres@127.0.0.1:15432/splathost?sslmode=disable"),
		PostgresReadURL:               l.str("SPLATHOST_POSTGRES_READ_URL", ""),
		PostgresReadMaxLag:            l.dur("SPLATHOST_POSTGRES_READ_MAX_LAG", 2*time.Second),
		TemporalAddr:                  l.str("SPLATHOST_TEMPORAL_ADDR", "127.0.0.1:7233"),
		TemporalNamespace:             l.str("SPLATHOST_TEMPORAL_NAMESPACE", "default"),
		TaskQueue:                     l.str("SPLATHOST_TASK_QUEUE", "splathost"),
		ClickHouseAddr:                l.str("SPLATHOST_CLICKHOUSE_ADDR", "127.0.0.1:19000"),
		ClickHouseDB:                  l.str("SPLATHOST_CLICKHOUSE_DB", "splathost"),
		ClickHouseCluster:             l.str("SPLATHOST_CLICKHOUSE_CLUSTER", ""),
		ClickHouseDDLStallAfter:       l.dur("SPLATHOST_CLICKHOUSE_DDL_STALL_AFTER", 30*time.Second),
		S3Endpoint:                    l.str("SPLATHOST_S3_ENDPOINT", "http://127.0.0.1:7070"),
		S3Fallbacks:                   l.str("SPLATHOST_S3_FALLBACKS", ""),
		S3Region:                      l.str("SPLATHOST_S3_REGION", "us-east-1"),
		S3AccessKey:                   l.str("SPLATHOST_S3_ACCESS_KEY", "splathost"),
		S3SecretKey:                   l.str("SPLATHOST_S3_SECRET_KEY", "splathost-dev-secret"),
		S3Bucket:                      l.str("SPLATHOST_S3_BUCKET", "splathost"),
		AssetBaseURL:                  l.str("SPLATHOST_ASSET_BASE_URL", ""),
		PublicURL:                     l.str("SPLATHOST_PUBLIC_URL", ""),
		AdminToken:                    l.str("SPLATHOST_ADMIN_TOKEN", ""),
		InternalSecret:                l.str("SPLATHOST_INTERNAL_SECRET", ""),
		SessionKeys:                   l.sessionKeys("SPLATHOST_SESSION_KEYS"),
		GatewayAddr:                   l.str("SPLATHOST_GATEWAY_ADDR", "127.0.0.1:8080"),
		UserAddr:                      l.str("SPLATHOST_USER_ADDR", "127.0.0.1:8081"),
		SceneAddr:                     l.str("SPLATHOST_SCENE_ADDR", "127.0.0.1:8082"),
		SessionAddr:                   l.str("SPLATHOST_SESSION_ADDR", "127.0.0.1:8083"),
		UserURL:                       l.str("SPLATHOST_USER_URL", "http://127.0.0.1:8081"),
		SceneURL:                      l.str("SPLATHOST_SCENE_URL", "http://127.0.0.1:8082"),
		SessionURL:                    l.str("SPLATHOST_SESSION_URL", "http://127.0.0.1:8083"),
		Replicas:                      l.int("SPLATHOST_REPLICAS", 1),
		WorkerHealthAddr:              l.str("SPLATHOST_WORKER_HEALTH_ADDR", "127.0.0.1:8084"),
		OTLPEndpoint:                  l.str("SPLATHOST_OTLP_ENDPOINT", ""),
		LogLevel:                      l.str("SPLATHOST_LOG_LEVEL", "info"),
		BodyLimit:                     l.int("SPLATHOST_BODY_LIMIT", 8<<20),
		ShutdownTimeout:               l.dur("SPLATHOST_SHUTDOWN_TIMEOUT", 10*time.Second),
		RequestBudget:                 l.dur("SPLATHOST_REQUEST_BUDGET", 45*time.Second),
		CloneWait:                     l.dur("SPLATHOST_CLONE_WAIT", 5*time.Second),
		CloneAbandonAfter:             l.dur("SPLATHOST_CLONE_ABANDON_AFTER", 3*time.Minute),
		CloneConcurrency:              l.int("SPLATHOST_CLONE_CONCURRENCY", 32),
		WorkerSchedules:               l.bool("SPLATHOST_WORKER_SCHEDULES", true),
		MediaTaskQueue:                l.str("SPLATHOST_MEDIA_TASK_QUEUE", "splathost-media"),
		MediaHealthAddr:               l.str("SPLATHOST_MEDIA_HEALTH_ADDR", "127.0.0.1:8085"),
		SplatTransform:                l.str("SPLATHOST_SPLAT_TRANSFORM", ""),
		Node:                          l.str("SPLATHOST_NODE", ""),
		RenditionTimeout:              l.dur("SPLATHOST_RENDITION_TIMEOUT", 20*time.Minute),
		RenditionMaxMemory:            l.int("SPLATHOST_RENDITION_MAX_MEMORY", 6<<30),
		RenditionLODMin:               l.int("SPLATHOST_RENDITION_LOD_MIN", 1_000_000),
		RenditionConcurrency:          l.int("SPLATHOST_RENDITION_CONCURRENCY", 1),
		RenditionMinBytes:             l.nonNegativeInt("SPLATHOST_RENDITION_MIN_BYTES", 0),
		RenditionWindow:               l.nonNegativeInt("SPLATHOST_RENDITION_WINDOW", 0),
		RenditionSmallBytes:           int64(l.nonNegativeInt("SPLATHOST_RENDITION_SMALL_BYTES", 16<<20)),
		RenditionSmallConcurrency:     l.int("SPLATHOST_RENDITION_SMALL_CONCURRENCY", 1),
		WebhookKey:                    l.hexKey("SPLATHOST_WEBHOOK_KEY", 32),
		WebhookAllowPrivate:           l.bool("SPLATHOST_WEBHOOK_ALLOW_PRIVATE", false),
		WebhookConcurrency:            l.int("SPLATHOST_WEBHOOK_CONCURRENCY", 4),
		WebhookIntegrationConcurrency: l.int("SPLATHOST_WEBHOOK_INTEGRATION_CONCURRENCY", 8),
		Pprof:                         l.bool(PprofEnv, false),
		RateLimit:                     l.rateLimits(),
	}
	if c.RequestBudget > MaxRequestBudget {
		l.errs = append(l.errs, fmt.Sprintf("SPLATHOST_REQUEST_BUDGET must be at most %s (the gateway waits 60s for a service)", MaxRequestBudget))
	}
	if c.CloneWait >= c.RequestBudget {
		l.errs = append(l.errs, "SPLATHOST_CLONE_WAIT must be shorter than SPLATHOST_REQUEST_BUDGET (a clone request waits within its budget)")
	}
	if len(l.errs) > 0 {
		return Config{}, fmt.Errorf("config: %s", strings.Join(l.errs, "; "))
	}
	return c, nil
}

// MaxRequestBudget bounds RequestBudget below the gateway's wait for a service's answer
// (httpx.UpstreamTimeout, 60 s; a test ties the two), leaving the service time to answer.
const MaxRequestBudget = 55 * time.Second

// AssetBase is AssetBaseURL, or the object store's bucket URL when that is not set.
func (c Config) AssetBase() string {
	if c.AssetBaseURL != "" {
		return strings.TrimSuffix(c.AssetBaseURL, "/")
	}
	return strings.TrimSuffix(c.S3Endpoint, "/") + "/" + c.S3Bucket
}

// PublicBase is PublicURL without a trailing slash, or http:// plus GatewayAddr when it is not
// set (an unspecified listen host becomes localhost).
func (c Config) PublicBase() string {
	if c.PublicURL != "" {
		return strings.TrimSuffix(c.PublicURL, "/")
	}
	host, port, err := net.SplitHostPort(c.GatewayAddr)
	if err != nil {
		return "http://" + c.GatewayAddr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// WebhookSealKey is the key that seals webhook secrets: WebhookKey, or one derived from the
// internal secret (HMAC-SHA256 under a fixed label) when that is not set.
func (c Config) WebhookSealKey() []byte {
	if len(c.WebhookKey) > 0 {
		return c.WebhookKey
	}
	m := hmac.New(sha256.New, []byte(c.InternalSecret))
	m.Write([]byte("splathost webhook secret sealing v1"))
	return m.Sum(nil)
}

// RequireSecrets reports an error when the secrets a public-facing binary needs are missing:
// an empty admin token would let anyone in, an empty internal secret would let anyone forge
// a caller identity, and without a session key no embed session can be minted or verified.
func (c Config) RequireSecrets() error {
	var missing []string
	if len(c.AdminToken) < 16 {
		missing = append(missing, "SPLATHOST_ADMIN_TOKEN (at least 16 characters)")
	}
	if len(c.InternalSecret) < 16 {
		missing = append(missing, "SPLATHOST_INTERNAL_SECRET (at least 16 characters)")
	}
	if len(c.SessionKeys) == 0 {
		missing = append(missing, "SPLATHOST_SESSION_KEYS (kid:secret, secret at least 32 characters)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("config: missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// Environ is this process's environment with every SPLATHOST_* value of c on top: what a
// child process (a service the stack runner starts, a worker a test starts) needs to load
// the same configuration. Variables c leaves empty (SPLATHOST_OTLP_ENDPOINT, for example)
// pass through, so a developer can still tune the services from the shell.
func (cfg Config) Environ() []string {
	vars := [][2]string{
		{"SPLATHOST_POSTGRES_URL", cfg.PostgresURL},
		{"SPLATHOST_POSTGRES_READ_URL", cfg.PostgresReadURL},
		{"SPLATHOST_POSTGRES_READ_MAX_LAG", cfg.PostgresReadMaxLag.String()},
		{"SPLATHOST_TEMPORAL_ADDR", cfg.TemporalAddr},
		{"SPLATHOST_TEMPORAL_NAMESPACE", cfg.TemporalNamespace},
		{"SPLATHOST_TASK_QUEUE", cfg.TaskQueue},
		{"SPLATHOST_CLICKHOUSE_ADDR", cfg.ClickHouseAddr},
		{"SPLATHOST_CLICKHOUSE_DB", cfg.ClickHouseDB},
		{"SPLATHOST_CLICKHOUSE_CLUSTER", cfg.ClickHouseCluster},
		{"SPLATHOST_CLICKHOUSE_DDL_STALL_AFTER", cfg.ClickHouseDDLStallAfter.String()},
		{"SPLATHOST_S3_ENDPOINT", cfg.S3Endpoint},
		{"SPLATHOST_S3_FALLBACKS", cfg.S3Fallbacks},
		{"SPLATHOST_S3_REGION", cfg.S3Region},
		{"SPLATHOST_S3_ACCESS_KEY", cfg.S3AccessKey},
		{"SPLATHOST_S3_SECRET_KEY", cfg.S3SecretKey},
		{"SPLATHOST_S3_BUCKET", cfg.S3Bucket},
		{"SPLATHOST_ASSET_BASE_URL", cfg.AssetBaseURL},
		{"SPLATHOST_PUBLIC_URL", cfg.PublicURL},
		{"SPLATHOST_ADMIN_TOKEN", cfg.AdminToken},
		{"SPLATHOST_INTERNAL_SECRET", cfg.InternalSecret},
		{"SPLATHOST_SESSION_KEYS", FormatSessionKeys(cfg.SessionKeys)},
		{"SPLATHOST_GATEWAY_ADDR", cfg.GatewayAddr},
		{"SPLATHOST_USER_ADDR", cfg.UserAddr},
		{"SPLATHOST_SCENE_ADDR", cfg.SceneAddr},
		{"SPLATHOST_SESSION_ADDR", cfg.SessionAddr},
		{"SPLATHOST_USER_URL", cfg.UserURL},
		{"SPLATHOST_SCENE_URL", cfg.SceneURL},
		{"SPLATHOST_SESSION_URL", cfg.SessionURL},
		{"SPLATHOST_REPLICAS", strconv.Itoa(cfg.Replicas)},
		{"SPLATHOST_WORKER_HEALTH_ADDR", cfg.WorkerHealthAddr},
		{"SPLATHOST_OTLP_ENDPOINT", cfg.OTLPEndpoint},
		{"SPLATHOST_LOG_LEVEL", cfg.LogLevel},
		{"SPLATHOST_BODY_LIMIT", strconv.Itoa(cfg.BodyLimit)},
		{"SPLATHOST_SHUTDOWN_TIMEOUT", cfg.ShutdownTimeout.String()},
		{"SPLATHOST_REQUEST_BUDGET", cfg.RequestBudget.String()},
		{"SPLATHOST_CLONE_WAIT", cfg.CloneWait.String()},
		{"SPLATHOST_CLONE_ABANDON_AFTER", cfg.CloneAbandonAfter.String()},
		{"SPLATHOST_CLONE_CONCURRENCY", strconv.Itoa(cfg.CloneConcurrency)},
		{"SPLATHOST_WORKER_SCHEDULES", strconv.FormatBool(cfg.WorkerSchedules)},
		{"SPLATHOST_MEDIA_TASK_QUEUE", cfg.MediaTaskQueue},
		{"SPLATHOST_MEDIA_HEALTH_ADDR", cfg.MediaHealthAddr},
		{"SPLATHOST_SPLAT_TRANSFORM", cfg.SplatTransform},
		{"SPLATHOST_NODE", cfg.Node},
		{"SPLATHOST_RENDITION_TIMEOUT", cfg.RenditionTimeout.String()},
		{"SPLATHOST_RENDITION_MAX_MEMORY", strconv.Itoa(cfg.RenditionMaxMemory)},
		{"SPLATHOST_RENDITION_LOD_MIN", strconv.Itoa(cfg.RenditionLODMin)},
		{"SPLATHOST_RENDITION_CONCURRENCY", strconv.Itoa(cfg.RenditionConcurrency)},
		{"SPLATHOST_RENDITION_MIN_BYTES", strconv.Itoa(cfg.RenditionMinBytes)},
		{"SPLATHOST_RENDITION_WINDOW", strconv.Itoa(cfg.RenditionWindow)},
		{"SPLATHOST_RENDITION_SMALL_BYTES", strconv.FormatInt(cfg.RenditionSmallBytes, 10)},
		{"SPLATHOST_RENDITION_SMALL_CONCURRENCY", strconv.Itoa(cfg.RenditionSmallConcurrency)},
		{"SPLATHOST_WEBHOOK_KEY", hex.EncodeToString(cfg.WebhookKey)},
		{"SPLATHOST_WEBHOOK_ALLOW_PRIVATE", strconv.FormatBool(cfg.WebhookAllowPrivate)},
		{"SPLATHOST_WEBHOOK_CONCURRENCY", strconv.Itoa(cfg.WebhookConcurrency)},
		{"SPLATHOST_WEBHOOK_INTEGRATION_CONCURRENCY", strconv.Itoa(cfg.WebhookIntegrationConcurrency)},
		{PprofEnv, strconv.FormatBool(cfg.Pprof)},
	}
	vars = append(vars, cfg.RateLimit.environ()...)
	set := make(map[string]bool, len(vars))
	for _, v := range vars {
		set[v[0]] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			env = append(env, kv)
		}
	}
	for _, v := range vars {
		if v[1] != "" {
			env = append(env, v[0]+"="+v[1])
		}
	}
	return env
}

// PprofEnv is the variable of Config.Pprof (the benchmark sets it on the stacks it profiles).
const PprofEnv = "SPLATHOST_PPROF"
