package deploy

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
)

// The secrets the deployment needs. Each has a distinct sentinel value, so the test can tell
// that a value reached a container from the environment and not from a literal in the file.
var secretSentinels = map[string]string{
	"POSTGRES_PASSWORD":         "pgpass0sentinel0c4f1e",
	"SPLATHOST_ADMIN_TOKEN":     "admintoken0sentinel0a81d2",
	"SPLATHOST_INTERNAL_SECRET": "internal0sentinel0b7e33",
	"SPLATHOST_SESSION_KEYS":    "k1:sessionkey0sentinel0f3c77sessionkey0sentinel",
	"SPLATHOST_S3_ACCESS_KEY":   "s3access0sentinel0d9c04",
	"SPLATHOST_S3_SECRET_KEY":   "s3secret0sentinel0e6a55",
}

// oneShots run to completion before the services that need them; everything else runs for
// the life of the deployment.
var oneShots = map[string]bool{
	"migrate":            true,
	"s3-init":            true,
	"temporal-schema":    true,
	"temporal-namespace": true,
}

var requiredServices = []string{
	"postgres", "temporal", "temporal-ui", "clickhouse", "s3", "migrate",
	"gateway", "user", "scene", "session", "worker", "media-worker",
}

// listenVar names the variable that sets each HTTP service's listen address; its port must be
// the one the healthcheck probes and the gateway forwards to.
var listenVar = map[string]string{
	"gateway":      "SPLATHOST_GATEWAY_ADDR",
	"user":         "SPLATHOST_USER_ADDR",
	"scene":        "SPLATHOST_SCENE_ADDR",
	"session":      "SPLATHOST_SESSION_ADDR",
	"worker":       "SPLATHOST_WORKER_HEALTH_ADDR",
	"media-worker": "SPLATHOST_MEDIA_HEALTH_ADDR",
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	return root
}

func secretEnv(omit string) []string {
	var env []string
	for k, v := range secretSentinels {
		if k != omit {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// loadProject loads docker-compose.yml the way `docker compose` does (interpolation, schema
// validation, normalisation, consistency checks), from the given variables only: neither the
// process environment nor a stray .env file can influence the result.
func loadProject(t *testing.T, opts ...cli.ProjectOptionsFn) (*types.Project, error) {
	t.Helper()
	root := repoRoot(t)
	base := []cli.ProjectOptionsFn{cli.WithWorkingDirectory(root)}
	options, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")}, append(base, opts...)...)
	require.NoError(t, err)
	return options.LoadProject(context.Background())
}

func mustLoad(t *testing.T) *types.Project {
	t.Helper()
	project, err := loadProject(t, cli.WithEnv(secretEnv("")))
	require.NoError(t, err, "docker-compose.yml must load and validate when the secrets are set")
	return project
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	svc, ok := p.Services[name]
	require.True(t, ok, "service %q is missing", name)
	return svc
}

func env(t *testing.T, svc types.ServiceConfig, key string) string {
	t.Helper()
	v, ok := svc.Environment[key]
	require.True(t, ok, "service %q does not set %s", svc.Name, key)
	require.NotNil(t, v, "service %q sets %s without a value", svc.Name, key)
	require.NotEmpty(t, *v, "service %q sets %s to an empty value", svc.Name, key)
	return *v
}

func port(t *testing.T, hostport string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	require.NoError(t, err, "bad host:port %q", hostport)
	return p
}

func TestComposeLoadsAndValidates(t *testing.T) {
	p := mustLoad(t)
	require.Equal(t, "splathost", p.Name)
	for _, name := range requiredServices {
		service(t, p, name)
	}
}

func TestLongRunningServicesHaveHealthchecksAndRestart(t *testing.T) {
	p := mustLoad(t)
	for name, svc := range p.Services {
		if oneShots[name] {
			// A one-shot that restarted would never reach "completed successfully".
			require.Equal(t, "no", svc.Restart, "one-shot %q must not restart", name)
			continue
		}
		require.NotNil(t, svc.HealthCheck, "long-running service %q has no healthcheck", name)
		require.False(t, svc.HealthCheck.Disable, "healthcheck of %q is disabled", name)
		require.NotEmpty(t, svc.HealthCheck.Test, "healthcheck of %q has no test", name)
		require.Contains(t, []string{"unless-stopped", "always"}, svc.Restart,
			"long-running service %q needs a restart policy", name)
	}
}

func TestSplathostServicesProbeReadyzOnTheirListenPort(t *testing.T) {
	p := mustLoad(t)
	for name, key := range listenVar {
		svc := service(t, p, name)
		addr := env(t, svc, key)
		require.True(t, strings.HasPrefix(addr, "0.0.0.0:"),
			"%s of %q must listen on all container interfaces, got %q", key, name, addr)
		test := strings.Join(svc.HealthCheck.Test, " ")
		want := fmt.Sprintf("http://127.0.0.1:%s/readyz", port(t, addr))
		require.Contains(t, test, want, "healthcheck of %q must probe /readyz on its listen port", name)
	}
}

func TestDependencyOrder(t *testing.T) {
	p := mustLoad(t)
	const (
		healthy   = types.ServiceConditionHealthy
		completed = types.ServiceConditionCompletedSuccessfully
	)
	storesAndTemporal := map[string]string{
		"migrate":            completed,
		"postgres":           healthy,
		"clickhouse":         healthy,
		"s3-init":            completed,
		"temporal":           healthy,
		"temporal-namespace": completed,
	}
	want := map[string]map[string]string{
		"migrate":            {"postgres": healthy, "clickhouse": healthy},
		"s3-init":            {"s3": healthy},
		"temporal-schema":    {"postgres": healthy},
		"temporal":           {"postgres": healthy, "temporal-schema": completed},
		"temporal-namespace": {"temporal": healthy},
		"temporal-ui":        {"temporal": healthy},
		"user":               storesAndTemporal,
		"scene":              storesAndTemporal,
		"session":            storesAndTemporal,
		"worker":             storesAndTemporal,
		"gateway": {
			"migrate": completed, "postgres": healthy,
			"user": healthy, "scene": healthy, "session": healthy,
		},
	}
	for name, deps := range want {
		svc := service(t, p, name)
		for dep, cond := range deps {
			got, ok := svc.DependsOn[dep]
			require.True(t, ok, "%q must depend on %q", name, dep)
			require.Equal(t, cond, got.Condition, "%q -> %q", name, dep)
			require.True(t, got.Required, "%q -> %q must be required", name, dep)
		}
	}

	// Whatever else is added later: waiting on a one-shot means waiting for its success, and
	// waiting on anything else means waiting for its health, never merely for its start.
	for name, svc := range p.Services {
		for dep, d := range svc.DependsOn {
			if oneShots[dep] {
				require.Equal(t, completed, d.Condition, "%q -> one-shot %q", name, dep)
			} else {
				require.Equal(t, healthy, d.Condition, "%q -> %q", name, dep)
			}
		}
	}
}

func TestOnlyGatewayAndTemporalUIPublishPorts(t *testing.T) {
	p := mustLoad(t)
	var publishing []string
	for name, svc := range p.Services {
		for _, port := range svc.Ports {
			if port.Published != "" {
				publishing = append(publishing, name)
				break
			}
		}
	}
	sort.Strings(publishing)
	require.Equal(t, []string{"gateway", "temporal-ui"}, publishing)

	gw := service(t, p, "gateway")
	require.Len(t, gw.Ports, 1)
	require.Equal(t, "8080", gw.Ports[0].Published)
	require.EqualValues(t, 8080, gw.Ports[0].Target)

	// The Temporal UI has no authentication: by default only the host itself may reach it.
	ui := service(t, p, "temporal-ui")
	require.Len(t, ui.Ports, 1)
	require.Equal(t, "127.0.0.1", ui.Ports[0].HostIP)
	require.Equal(t, "temporal:7233", env(t, ui, "TEMPORAL_ADDRESS"))
}

func TestSecretsComeOnlyFromTheEnvironment(t *testing.T) {
	for secret := range secretSentinels {
		t.Run("without "+secret, func(t *testing.T) {
			_, err := loadProject(t, cli.WithEnv(secretEnv(secret)))
			require.Error(t, err, "compose must refuse to load without %s", secret)
			require.Contains(t, err.Error(), "required variable "+secret)
		})
	}

	// A copied env.example is not a working configuration: its secrets are empty, and
	// `${VAR:?}` rejects empty values as well as missing ones.
	t.Run("env.example", func(t *testing.T) {
		_, err := loadProject(t, cli.WithEnvFiles(filepath.Join(repoRoot(t), "deploy", "env.example")), cli.WithDotEnv)
		require.Error(t, err)
		require.Contains(t, err.Error(), "required variable")
	})

	// One `${SECRET:-fallback}` next to the required references would still load above, yet
	// give that container a guessable default whenever the variable is unset.
	t.Run("every reference is required", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docker-compose.yml"))
		require.NoError(t, err)
		for secret := range secretSentinels {
			ref := regexp.MustCompile(`\$\{?` + secret + `\b(.{0,2})`)
			matches := ref.FindAllStringSubmatch(string(raw), -1)
			require.NotEmpty(t, matches, "%s is never referenced", secret)
			for _, m := range matches {
				require.True(t, strings.HasPrefix(m[0], "${") && m[1] == ":?",
					"reference %q to %s must use the required form ${%s:?message}", m[0], secret, secret)
			}
		}
	})

	// Every secret-looking setting of every container carries one of the sentinels, so none
	// of them can be a literal written into the compose file.
	t.Run("no literals", func(t *testing.T) {
		p := mustLoad(t)
		secretKey := regexp.MustCompile(`PASSWORD|PWD|SECRET|TOKEN|ACCESS_KEY`)
		checked := 0
		for name, svc := range p.Services {
			for key, v := range svc.Environment {
				if !secretKey.MatchString(key) || v == nil {
					continue
				}
				found := false
				for _, sentinel := range secretSentinels {
					if strings.Contains(*v, sentinel) {
						found = true
						break
					}
				}
				require.True(t, found, "%s of %q is not taken from a required variable", key, name)
				checked++
			}
		}
		require.Greater(t, checked, 10, "expected the secrets to reach many containers")
	})
}

func TestServiceEnvironment(t *testing.T) {
	p := mustLoad(t)

	for _, name := range []string{"migrate", "user", "scene", "session", "worker"} {
		svc := service(t, p, name)
		u, err := url.Parse(env(t, svc, "SPLATHOST_POSTGRES_URL"))
		require.NoError(t, err)
		require.Equal(t, "postgres", u.Scheme)
		require.Equal(t, "postgres:5432", u.Host, "%q must reach Postgres by its service name", name)
		pw, ok := u.User.Password()
		require.True(t, ok)
		require.Equal(t, secretSentinels["POSTGRES_PASSWORD"], pw)
		require.Contains(t, svc.DependsOn, "postgres")
	}

	for _, name := range []string{"user", "scene", "worker"} {
		svc := service(t, p, name)
		require.Equal(t, "temporal:7233", env(t, svc, "SPLATHOST_TEMPORAL_ADDR"))
		ns := env(t, svc, "SPLATHOST_TEMPORAL_NAMESPACE")
		// The namespace the services use is the one the one-shot job registers.
		require.Equal(t, env(t, service(t, p, "temporal-namespace"), "NAMESPACE"), ns)
		env(t, svc, "SPLATHOST_TASK_QUEUE")
	}

	for _, name := range []string{"migrate", "scene", "session", "worker"} {
		svc := service(t, p, name)
		require.Equal(t, "clickhouse:9000", env(t, svc, "SPLATHOST_CLICKHOUSE_ADDR"))
		env(t, svc, "SPLATHOST_CLICKHOUSE_DB")
	}

	for _, name := range []string{"scene", "worker"} {
		svc := service(t, p, name)
		require.Equal(t, "http://s3:7070", env(t, svc, "SPLATHOST_S3_ENDPOINT"))
		require.Equal(t, secretSentinels["SPLATHOST_S3_ACCESS_KEY"], env(t, svc, "SPLATHOST_S3_ACCESS_KEY"))
		require.Equal(t, secretSentinels["SPLATHOST_S3_SECRET_KEY"], env(t, svc, "SPLATHOST_S3_SECRET_KEY"))
		// The bucket the services use is the one the one-shot job creates.
		require.Equal(t, env(t, service(t, p, "s3-init"), "BUCKET"), env(t, svc, "SPLATHOST_S3_BUCKET"))
		env(t, svc, "SPLATHOST_S3_REGION")
	}

	// The services verify the identity the gateway forwards, so they share its secret.
	for _, name := range []string{"gateway", "user", "scene", "session"} {
		svc := service(t, p, name)
		require.Equal(t, secretSentinels["SPLATHOST_ADMIN_TOKEN"], env(t, svc, "SPLATHOST_ADMIN_TOKEN"))
		require.Equal(t, secretSentinels["SPLATHOST_INTERNAL_SECRET"], env(t, svc, "SPLATHOST_INTERNAL_SECRET"))
		require.Equal(t, secretSentinels["SPLATHOST_SESSION_KEYS"], env(t, svc, "SPLATHOST_SESSION_KEYS"))
	}

	// The gateway forwards to each service by compose name, on the port the service listens on.
	gw := service(t, p, "gateway")
	for upstream, key := range map[string]string{
		"user":    "SPLATHOST_USER_URL",
		"scene":   "SPLATHOST_SCENE_URL",
		"session": "SPLATHOST_SESSION_URL",
	} {
		u, err := url.Parse(env(t, gw, key))
		require.NoError(t, err)
		require.Equal(t, "http", u.Scheme)
		require.Equal(t, upstream, u.Hostname(), "%s must name the compose service", key)
		listen := env(t, service(t, p, upstream), listenVar[upstream])
		require.Equal(t, port(t, listen), u.Port(), "%s must use the port %q listens on", key, upstream)
	}

	// The object store and the services agree on credentials.
	s3 := service(t, p, "s3")
	require.Equal(t, secretSentinels["SPLATHOST_S3_ACCESS_KEY"], env(t, s3, "ROOT_ACCESS_KEY"))
	require.Equal(t, secretSentinels["SPLATHOST_S3_SECRET_KEY"], env(t, s3, "ROOT_SECRET_KEY"))
}

func TestImagesAndBuilds(t *testing.T) {
	p := mustLoad(t)
	root := repoRoot(t)

	var appImage string
	for _, name := range []string{"migrate", "gateway", "user", "scene", "session", "worker"} {
		svc := service(t, p, name)
		require.NotNil(t, svc.Build, "%q must be buildable from the repository", name)
		require.Equal(t, root, svc.Build.Context, "%q builds from the repository root", name)
		require.Equal(t, "deploy/Dockerfile", filepath.ToSlash(svc.Build.Dockerfile))
		if appImage == "" {
			appImage = svc.Image
		}
		require.Equal(t, appImage, svc.Image, "all splathost binaries ship in one image")
	}

	s3 := service(t, p, "s3")
	require.NotNil(t, s3.Build)
	require.Equal(t, "versitygw.Dockerfile", s3.Build.Dockerfile)
	dockerfile, err := os.ReadFile(filepath.Join(s3.Build.Context, s3.Build.Dockerfile))
	require.NoError(t, err)
	require.Contains(t, string(dockerfile), "github.com/versity/versitygw/cmd/versitygw@v1.8.0")

	require.True(t, strings.HasPrefix(service(t, p, "postgres").Image, "postgres:15"))
	require.True(t, strings.HasPrefix(service(t, p, "clickhouse").Image, "clickhouse/clickhouse-server:"))
	require.True(t, strings.HasPrefix(service(t, p, "temporal-ui").Image, "temporalio/ui:"))

	// Every image is pinned: a floating tag would change the deployment under the operator.
	for name, svc := range p.Services {
		require.NotEmpty(t, svc.Image, "%q has no image", name)
		require.False(t, strings.HasSuffix(svc.Image, ":latest"), "%q uses :latest", name)
		require.Contains(t, svc.Image, ":", "%q has an untagged image", name)
	}

	// Stateful stores keep their data in named volumes, which survive `docker compose down`.
	for name, target := range map[string]string{
		"postgres":   "/var/lib/postgresql/data",
		"clickhouse": "/var/lib/clickhouse",
		"s3":         "/data",
	} {
		found := false
		for _, v := range service(t, p, name).Volumes {
			if v.Target == target {
				require.Equal(t, types.VolumeTypeVolume, v.Type, "%q must keep %s on a named volume", name, target)
				require.Contains(t, p.Volumes, v.Source)
				found = true
			}
		}
		require.True(t, found, "%q has no volume on %s", name, target)
	}

	// Every file the compose file mounts exists in the repository.
	for name, svc := range p.Services {
		for _, v := range svc.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			require.True(t, strings.HasPrefix(v.Source, filepath.Join(root, "deploy")+string(filepath.Separator)),
				"%q mounts %s from outside deploy/", name, v.Source)
			_, err := os.Stat(v.Source)
			require.NoError(t, err, "%q mounts a missing file", name)
			require.True(t, v.ReadOnly, "%q must mount %s read-only", name, v.Source)
		}
	}
}

// TestBinariesExist ties the compose file to the code: every binary a service runs must be a
// main package under cmd/, or the image build produces no such executable.
func TestBinariesExist(t *testing.T) {
	p := mustLoad(t)
	root := repoRoot(t)
	appImage := service(t, p, "gateway").Image

	binaries := map[string]bool{}
	for name, svc := range p.Services {
		if svc.Image != appImage {
			continue
		}
		require.NotEmpty(t, svc.Command, "%q must name its binary", name)
		binaries[filepath.Base(svc.Command[0])] = true
	}
	require.Equal(t, []string{"migrate"}, []string(service(t, p, "migrate").Command[1:]))
	require.Equal(t, "splathost", service(t, p, "migrate").Command[0])

	var names []string
	for b := range binaries {
		names = append(names, b)
	}
	sort.Strings(names)
	require.Equal(t, []string{"gateway", "scene", "session", "splathost", "user", "worker"}, names)

	var missing []string
	for _, b := range names {
		if fi, err := os.Stat(filepath.Join(root, "cmd", b)); err != nil || !fi.IsDir() {
			missing = append(missing, "cmd/"+b)
		}
	}
	require.Empty(t, missing, "binaries named in docker-compose.yml without a main package")
}

// TestNamespaceJobRegistersSearchAttributes: workflows set these search attributes at start and
// Temporal refuses a start naming an unregistered one, so the deployment must create them.
func TestNamespaceJobRegistersSearchAttributes(t *testing.T) {
	script, err := os.ReadFile("temporal/create-namespace.sh")
	require.NoError(t, err)
	require.Contains(t, string(script), "search-attribute create")
	for _, attr := range []string{"integrationId", "externalUserId", "splatId", "sourceSplatId"} {
		require.Contains(t, string(script), attr)
	}
}
