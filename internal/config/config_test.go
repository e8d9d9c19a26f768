package config

import (
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/ratelimit"
)

// clearEnv blanks every SPLATHOST_* variable for the test (an empty value means the default).
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SPLATHOST_") {
			t.Setenv(k, "")
		}
	}
}

func TestLoadDefaults(t *testing.T) {
	clearEnv(t)
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, "postgres://postgres@127.0.0.1:15432/splathost?sslmode=disable", c.PostgresURL)
	require.Empty(t, c.PostgresReadURL, "no standby: every read goes to the primary")
	require.Equal(t, "127.0.0.1:8080", c.GatewayAddr)
	require.Equal(t, "info", c.LogLevel)
	require.Equal(t, 8<<20, c.BodyLimit)
	require.Equal(t, 10*time.Second, c.ShutdownTimeout)
	require.Empty(t, c.AdminToken)
	require.Empty(t, c.InternalSecret)
	require.Empty(t, c.OTLPEndpoint)
	require.Error(t, c.RequireSecrets(), "the defaults have no secrets")
}

func TestLoadValues(t *testing.T) {
	clearEnv(t)
	t.Setenv("SPLATHOST_POSTGRES_URL", "postgres://db/x")
	t.Setenv("SPLATHOST_BODY_LIMIT", "1024")
	t.Setenv("SPLATHOST_SHUTDOWN_TIMEOUT", "1m30s")
	t.Setenv("SPLATHOST_ADMIN_TOKEN", "tok")
	t.Setenv("SPLATHOST_LOG_LEVEL", "debug")
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, "postgres://db/x", c.PostgresURL)
	require.Equal(t, 1024, c.BodyLimit)
	require.Equal(t, 90*time.Second, c.ShutdownTimeout)
	require.Equal(t, "tok", c.AdminToken)
	require.Equal(t, "debug", c.LogLevel)
}

func TestLoadRejectsBadValues(t *testing.T) {
	const (
		bodyErr = "SPLATHOST_BODY_LIMIT must be a positive integer"
		durErr  = "SPLATHOST_SHUTDOWN_TIMEOUT must be a positive duration"
	)
	tests := []struct {
		name      string
		bodyLimit string
		shutdown  string
		wantErrs  []string
	}{
		{name: "body limit words", bodyLimit: "lots", wantErrs: []string{bodyErr}},
		{name: "body limit with unit", bodyLimit: "8MB", wantErrs: []string{bodyErr}},
		{name: "body limit zero", bodyLimit: "0", wantErrs: []string{bodyErr}},
		{name: "body limit negative", bodyLimit: "-1", wantErrs: []string{bodyErr}},
		{name: "body limit fraction", bodyLimit: "1.5", wantErrs: []string{bodyErr}},
		{name: "body limit exponent", bodyLimit: "1e6", wantErrs: []string{bodyErr}},
		{name: "body limit padded", bodyLimit: " 1024", wantErrs: []string{bodyErr}},
		{name: "body limit overflow", bodyLimit: "99999999999999999999", wantErrs: []string{bodyErr}},
		{name: "duration without unit", shutdown: "10", wantErrs: []string{durErr}},
		{name: "duration zero", shutdown: "0s", wantErrs: []string{durErr}},
		{name: "duration negative", shutdown: "-5s", wantErrs: []string{durErr}},
		{name: "duration words", shutdown: "ten seconds", wantErrs: []string{durErr}},
		{name: "both named", bodyLimit: "x", shutdown: "y", wantErrs: []string{bodyErr, durErr}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			if tt.bodyLimit != "" {
				t.Setenv("SPLATHOST_BODY_LIMIT", tt.bodyLimit)
			}
			if tt.shutdown != "" {
				t.Setenv("SPLATHOST_SHUTDOWN_TIMEOUT", tt.shutdown)
			}
			c, err := Load()
			require.Error(t, err)
			require.Equal(t, Config{}, c, "no partial configuration on error")
			require.True(t, strings.HasPrefix(err.Error(), "config: "), err.Error())
			for _, want := range tt.wantErrs {
				require.Contains(t, err.Error(), want)
			}
			if len(tt.wantErrs) == 1 {
				require.NotContains(t, err.Error(), ";", "only the bad variable is named")
			}
		})
	}
}

func TestLoadEmptyMeansDefault(t *testing.T) {
	clearEnv(t)
	t.Setenv("SPLATHOST_BODY_LIMIT", "")
	t.Setenv("SPLATHOST_SHUTDOWN_TIMEOUT", "")
	t.Setenv("SPLATHOST_GATEWAY_ADDR", "")
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, 8<<20, c.BodyLimit)
	require.Equal(t, 10*time.Second, c.ShutdownTimeout)
	require.Equal(t, "127.0.0.1:8080", c.GatewayAddr)
}

func TestRequireSecrets(t *testing.T) {
	long := strings.Repeat("s", 16)
	tests := []struct {
		name            string
		admin, internal string
		wantErr         bool
		mentions        []string
	}{
		{name: "both 16", admin: long, internal: long},
		{name: "both long", admin: long + long, internal: long + "x"},
		{name: "both empty", wantErr: true, mentions: []string{"SPLATHOST_ADMIN_TOKEN", "SPLATHOST_INTERNAL_SECRET"}},
		{name: "admin 15", admin: long[:15], internal: long, wantErr: true, mentions: []string{"SPLATHOST_ADMIN_TOKEN"}},
		{name: "internal 15", admin: long, internal: long[:15], wantErr: true, mentions: []string{"SPLATHOST_INTERNAL_SECRET"}},
		{name: "admin missing", internal: long, wantErr: true, mentions: []string{"SPLATHOST_ADMIN_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := []SessionKey{{ID: "k1", Secret: []byte(long + long)}}
			err := Config{AdminToken: tt.admin, InternalSecret: tt.internal, SessionKeys: keys}.RequireSecrets()
			if !tt.wantErr {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, m := range tt.mentions {
				require.Contains(t, err.Error(), m)
			}
			for _, v := range []string{"SPLATHOST_ADMIN_TOKEN", "SPLATHOST_INTERNAL_SECRET"} {
				in := false
				for _, m := range tt.mentions {
					in = in || m == v
				}
				if !in {
					require.NotContains(t, err.Error(), v)
				}
			}
			if tt.admin != "" {
				require.NotContains(t, err.Error(), tt.admin, "a secret is never echoed")
			}
		})
	}
}

func TestLoadThenRequireSecrets(t *testing.T) {
	clearEnv(t)
	t.Setenv("SPLATHOST_ADMIN_TOKEN", "admin-token-0123456789")
	t.Setenv("SPLATHOST_INTERNAL_SECRET", "internal-secret-0123456789")
	c, err := Load()
	require.NoError(t, err)
	require.ErrorContains(t, c.RequireSecrets(), "SPLATHOST_SESSION_KEYS")
	t.Setenv("SPLATHOST_SESSION_KEYS", "new:"+strings.Repeat("n", 32)+", old:"+strings.Repeat("o", 40))
	c, err = Load()
	require.NoError(t, err)
	require.NoError(t, c.RequireSecrets())
	require.Equal(t, []SessionKey{{ID: "new", Secret: []byte(strings.Repeat("n", 32))}, {ID: "old", Secret: []byte(strings.Repeat("o", 40))}}, c.SessionKeys)
}

func TestSessionKeysRules(t *testing.T) {
	secret := strings.Repeat("x", 32)
	for name, v := range map[string]string{
		"no kid":        secret,
		"empty kid":     ":" + secret,
		"short secret":  "k1:" + secret[:31],
		"kid twice":     "k1:" + secret + ",k1:" + secret + "y",
		"bad kid":       "k 1:" + secret,
		"long kid":      strings.Repeat("k", 33) + ":" + secret,
		"trailing item": "k1:" + secret + ",",
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("SPLATHOST_SESSION_KEYS", v)
			_, err := Load()
			require.ErrorContains(t, err, "SPLATHOST_SESSION_KEYS")
			require.NotContains(t, err.Error(), secret[:31], "a secret is never echoed")
		})
	}
}

// TestEnvironRoundTrips hands a configuration to a "child" through Environ and loads it back:
// every field must survive, so a worker a test or the stack runner starts sees exactly the
// parent's stores. The reflection check makes a new field fail here until Environ carries it.
func TestEnvironRoundTrips(t *testing.T) {
	clearEnv(t)
	want := Config{
		PostgresURL: "postgres://db/x", PostgresReadURL: "postgres://standby/x", PostgresReadMaxLag: 5 * time.Second, TemporalAddr: "t:1", TemporalNamespace: "ns", TaskQueue: "q",
		ClickHouseAddr: "ch:9", ClickHouseDB: "cdb", ClickHouseCluster: "analytics", ClickHouseDDLStallAfter: 45 * time.Second, S3Endpoint: "http://s3:1", S3Fallbacks: "s3b:1,s3c:1", S3Region: "eu-west-1",
		S3AccessKey: "ak", S3SecretKey: "sk", S3Bucket: "b", AssetBaseURL: "https://cdn.example", PublicURL: "https://api.example",
		AdminToken: "admin-token-0123456789", InternalSecret: "internal-secret-0123",
		SessionKeys: []SessionKey{{ID: "k2", Secret: []byte("0123456789abcdef0123456789abcdef")}},
		GatewayAddr: "g:1", UserAddr: "u:1", SceneAddr: "s:1", SessionAddr: "se:1",
		UserURL: "http://u:1,http://u:2", SceneURL: "http://s:1", SessionURL: "http://se:1", Replicas: 2, WorkerHealthAddr: "w:1",
		OTLPEndpoint: "otel:4317", LogLevel: "debug", BodyLimit: 1234, ShutdownTimeout: 3 * time.Second,
		RequestBudget: 30 * time.Second, CloneWait: 2 * time.Second, CloneAbandonAfter: time.Minute, CloneConcurrency: 7, WorkerSchedules: true,
		MediaTaskQueue: "mq", MediaHealthAddr: "m:1", SplatTransform: "/opt/st/cli.mjs", Node: "/opt/node/bin/node", RenditionTimeout: time.Minute,
		RenditionMaxMemory: 1 << 30, RenditionLODMin: 5000, RenditionConcurrency: 2, RenditionMinBytes: 1 << 18,
		RenditionWindow: 6, RenditionSmallBytes: 1 << 20, RenditionSmallConcurrency: 3, WebhookKey: []byte("0123456789abcdef0123456789abcdef"), WebhookAllowPrivate: true, WebhookConcurrency: 9, WebhookIntegrationConcurrency: 11, Pprof: true,
		RateLimit: RateLimits{Enabled: false, APIFree: ratelimit.Limit{Quota: 1, Window: time.Second},
			APIPro: ratelimit.Limit{Quota: 2, Window: time.Minute}, APIEnterprise: ratelimit.Limit{Quota: 3, Window: time.Hour},
			Session: ratelimit.Limit{Quota: 4, Window: 10 * time.Second}, Miss: ratelimit.Limit{},
			Read: ratelimit.Limit{Quota: 6, Window: 90 * time.Second}, Visitors: ratelimit.Limit{Quota: 7, Window: time.Second},
			Views:          ratelimit.Limit{Quota: 8, Window: time.Second},
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::1/128")}},
	}
	v := reflect.ValueOf(want)
	for i := 0; i < v.NumField(); i++ {
		require.False(t, v.Field(i).IsZero(), "set %s in this test", v.Type().Field(i).Name)
	}
	for _, kv := range want.Environ() {
		if k, val, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SPLATHOST_") {
			t.Setenv(k, val)
		}
	}
	got, err := Load()
	require.NoError(t, err)
	require.Equal(t, want, got)

	want.WorkerSchedules = false
	for _, kv := range want.Environ() {
		if k, val, _ := strings.Cut(kv, "="); k == "SPLATHOST_WORKER_SCHEDULES" {
			t.Setenv(k, val)
		}
	}
	got, err = Load()
	require.NoError(t, err)
	require.False(t, got.WorkerSchedules, "false survives too")
}

// TestPublicBase: the asset URLs' origin is PublicURL, else the gateway's listen address, with
// an unspecified host named localhost.
func TestPublicBase(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{PublicURL: "https://api.example/", GatewayAddr: "127.0.0.1:8080"}, "https://api.example"},
		{Config{GatewayAddr: "127.0.0.1:8080"}, "http://127.0.0.1:8080"},
		{Config{GatewayAddr: ":8080"}, "http://localhost:8080"},
		{Config{GatewayAddr: "0.0.0.0:9"}, "http://localhost:9"},
	} {
		require.Equal(t, c.want, c.cfg.PublicBase())
	}
}

// TestWebhookKey: SPLATHOST_WEBHOOK_KEY is 64 hex characters (a malformed one is refused without
// echoing it); without it the sealing key derives from the internal secret, so it is stable.
func TestWebhookKey(t *testing.T) {
	clearEnv(t)
	t.Setenv("SPLATHOST_WEBHOOK_KEY", "abc123")
	_, err := Load()
	require.ErrorContains(t, err, "SPLATHOST_WEBHOOK_KEY")
	require.NotContains(t, err.Error(), "abc123")
	t.Setenv("SPLATHOST_WEBHOOK_KEY", strings.Repeat("ab", 32))
	c, err := Load()
	require.NoError(t, err)
	require.Len(t, c.WebhookSealKey(), 32)
	require.Equal(t, c.WebhookKey, c.WebhookSealKey())
	derived := Config{InternalSecret: "internal-secret-0123"}.WebhookSealKey()
	require.Len(t, derived, 32)
	require.Equal(t, derived, Config{InternalSecret: "internal-secret-0123"}.WebhookSealKey())
	require.NotEqual(t, derived, Config{InternalSecret: "another-secret-0123"}.WebhookSealKey())
}

// TestRateLimits: the defaults of docs/security.md, every limit settable (or off), the plans'
// limits picked by name, trusted proxies as addresses or prefixes, and a malformed value named.
func TestRateLimits(t *testing.T) {
	clearEnv(t)
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, DefaultRateLimits, c.RateLimit)
	require.True(t, c.RateLimit.Enabled)
	require.Equal(t, ratelimit.Limit{Quota: 100, Window: time.Second}, c.RateLimit.Miss)
	require.Equal(t, c.RateLimit.APIPro, c.RateLimit.API("pro"))
	require.Equal(t, c.RateLimit.APIEnterprise, c.RateLimit.API("enterprise"))
	require.Equal(t, c.RateLimit.APIFree, c.RateLimit.API(""), "an unknown plan gets the free plan's limit")
	require.Empty(t, c.RateLimit.TrustedProxies, "X-Forwarded-For is ignored unless a proxy is trusted")

	t.Setenv("SPLATHOST_RATELIMIT_MISS", "20/1s")
	t.Setenv("SPLATHOST_RATELIMIT_READ", "off")
	t.Setenv("SPLATHOST_RATELIMIT_API_PRO", "50/1m")
	t.Setenv("SPLATHOST_TRUSTED_PROXIES", "10.1.2.3, 192.168.0.0/16,::ffff:10.9.9.9")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, ratelimit.Limit{Quota: 20, Window: time.Second}, c.RateLimit.Miss)
	require.True(t, c.RateLimit.Read.Off())
	require.Equal(t, ratelimit.Limit{Quota: 50, Window: time.Minute}, c.RateLimit.API("pro"))
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.1.2.3/32"), netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("10.9.9.9/32")}, c.RateLimit.TrustedProxies)

	t.Setenv("SPLATHOST_RATELIMIT_SESSION", "lots")
	t.Setenv("SPLATHOST_TRUSTED_PROXIES", "proxy.example")
	_, err = Load()
	require.ErrorContains(t, err, "SPLATHOST_RATELIMIT_SESSION")
	require.ErrorContains(t, err, "SPLATHOST_TRUSTED_PROXIES")
}

// TestRequestBudgetBounds: the budget must leave the gateway time to hear the service's answer,
// and a clone's wait must fit inside it.
func TestRequestBudgetBounds(t *testing.T) {
	clearEnv(t)
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, 45*time.Second, c.RequestBudget)
	for _, tc := range []struct{ budget, wait, want string }{
		{"56s", "", "SPLATHOST_REQUEST_BUDGET must be at most 55s"},
		{"4s", "5s", "SPLATHOST_CLONE_WAIT must be shorter than SPLATHOST_REQUEST_BUDGET"},
		{"0s", "", "SPLATHOST_REQUEST_BUDGET must be a positive duration"},
	} {
		clearEnv(t)
		t.Setenv("SPLATHOST_REQUEST_BUDGET", tc.budget)
		if tc.wait != "" {
			t.Setenv("SPLATHOST_CLONE_WAIT", tc.wait)
		}
		_, err := Load()
		require.ErrorContains(t, err, tc.want, tc.budget)
	}
	clearEnv(t)
	t.Setenv("SPLATHOST_REQUEST_BUDGET", "3s")
	t.Setenv("SPLATHOST_CLONE_WAIT", "1s")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, c.RequestBudget)
}
