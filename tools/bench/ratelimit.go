package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/ratelimit"
	"github.com/splathost/splathost/internal/spawn"
	"github.com/splathost/splathost/internal/testenv"
)

// GoalRateLimit caps what the rate limiter adds to a hot path's latency: p50 and p99 with the
// limiter on over the same gateway with it off, within a few per cent.
var GoalRateLimit = &Goal{Target: 1.05, Unit: "× off"}

// neverRefuse is a quota no load of the benchmark reaches.
const neverRefuse = "1000000000/1s"

// limitsNeverRefuse is the environment of every stack of the benchmark: the rate limits on, so
// every measure pays for them, with quotas nothing here reaches. One tenant, one session and one
// client address stand in for many callers in these measures; the defaults would refuse them.
var limitsNeverRefuse = []string{
	"SPLATHOST_RATELIMIT_ENABLED=true",
	"SPLATHOST_RATELIMIT_API_FREE=" + neverRefuse, "SPLATHOST_RATELIMIT_API_PRO=" + neverRefuse,
	"SPLATHOST_RATELIMIT_API_ENTERPRISE=" + neverRefuse, "SPLATHOST_RATELIMIT_SESSION=" + neverRefuse,
	"SPLATHOST_RATELIMIT_MISS=" + neverRefuse, "SPLATHOST_RATELIMIT_READ=" + neverRefuse,
	"SPLATHOST_RATELIMIT_VISITORS=" + neverRefuse, "SPLATHOST_RATELIMIT_VIEWS=" + neverRefuse,
}

// rateLimitRounds is the least number of alternated rounds of each of the limiter's comparisons.
const rateLimitRounds = 5

// rateLimitPaths are the hot paths of the limiter's three scopes.
var rateLimitPaths = []string{"GET /api/v1/splats/{id}", "GET /api/embed/splats/{id}", "GET /assets/{key}"}

// rateLimitRows are the limiter's rows: p50 and p99 of each hot path, on against off.
type rateLimitRows struct{ p50, p99 []*Row }

func newRateLimitRows(mode string) *rateLimitRows {
	rl := &rateLimitRows{}
	for _, p := range rateLimitPaths {
		rl.p50 = append(rl.p50, &Row{Name: "rate limiter on/off, " + p + " p50, " + mode, Unit: "µs", Goal: GoalRateLimit})
		rl.p99 = append(rl.p99, &Row{Name: "rate limiter on/off, " + p + " p99, " + mode, Unit: "µs", Goal: GoalRateLimit})
	}
	return rl
}

func (rl *rateLimitRows) all() []*Row { return append(append([]*Row(nil), rl.p50...), rl.p99...) }

// rateLimit measures what the limiter costs: a gateway with the limiter on (quotas never
// reached) against one with it off, both in front of the split stack's services,
// in alternated rounds of r.o.Concurrency keep-alive connections, on the hot path of each scope:
// a scene read with keys (per integration), the embed's scene read (per session), a public
// scene's file (per client address, charged after the answer).
func (r *runner) rateLimit(ctx context.Context, st *testenv.Stack, mode string, t Tenant, rl *rateLimitRows) {
	fail := func(err error) {
		failRows(err, rl.all()...)
	}
	gw := st.State.GatewayURL
	id, err := t.NewScene(gw)
	var scene map[string]any
	var token string
	if err == nil {
		token, err = t.viewerSession(gw, id)
	}
	if err == nil {
		scene, err = call(gw, http.MethodGet, "/api/v1/splats/"+id, t.Headers(), nil, http.StatusOK)
	}
	if err != nil {
		fail(fmt.Errorf("rate limit setup: %w", err))
		return
	}
	splat, _ := scene["splat"].(map[string]any)
	splatURL, _ := splat["splatUrl"].(string)
	asset := strings.TrimPrefix(splatURL, gw)
	if !strings.HasPrefix(asset, "/assets/") || token == "" {
		fail(fmt.Errorf("rate limit setup: splatUrl %q is not the gateway's public asset route, or no session", splatURL))
		return
	}
	// Both sides are gateways this measure starts the same way (their logs written the same way,
	// not one through the stack runner's pipe), so the limiter is their only difference.
	never := ratelimit.Limit{Quota: 1_000_000_000, Window: time.Second}
	// The plans' limits are leased from Postgres in batches of 1 % of the quota: a quota the load
	// never reaches, yet small enough that the gateway leases a batch every 500 requests, so the
	// measure pays for the shared buckets' round trips as a plan near its limit does.
	leased := ratelimit.Limit{Quota: 50_000, Window: time.Second}
	on, err := r.startGateway(ctx, st, "gateway-ratelimit-on", func(c *config.Config) {
		c.RateLimit = config.RateLimits{Enabled: true, APIFree: leased, APIPro: leased, APIEnterprise: leased,
			Session: never, Miss: never, Read: never, Visitors: never, Views: never}
	})
	if err != nil {
		fail(err)
		return
	}
	defer r.stopGateway(on)
	off, err := r.startGateway(ctx, st, "gateway-ratelimit-off", func(c *config.Config) { c.RateLimit.Enabled = false })
	if err != nil {
		fail(err)
		return
	}
	defer r.stopGateway(off)
	loads := []struct {
		path string
		req  Request
	}{
		{"/api/v1/splats/" + id, Request{}},
		{"/api/embed/splats/" + id, Request{Headers: map[string]string{"Authorization": "Bearer " + token}}},
		{asset, Request{Headers: map[string]string{}}},
	}
	for i, l := range loads {
		h := l.req.headers(t)
		onSide := Side{Name: "limiter on", Load: r.loadOptions(on.url+l.path, h, l.req), PIDs: []int{on.proc.Pid()}}
		offSide := Side{Name: "limiter off", Load: r.loadOptions(off.url+l.path, h, l.req), PIDs: []int{off.proc.Pid()}}
		r.o.Log.Info("loading the gateway with the rate limiter on and off in alternated rounds", "path", rateLimitPaths[i])
		// A difference of a few per cent needs more rounds than the gateway/bare ratios: on two
		// shared cores one round's p99 moves by 10-15% from the next.
		onRes, offRes, err := RunAB(ctx, max(r.o.rounds(), rateLimitRounds), onSide, offSide)
		p50, p99 := rl.p50[i], rl.p99[i]
		if err != nil {
			p50.Err, p99.Err = err, err
			continue
		}
		micros := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
		p50.Value, p50.Bare = micros(onRes.P50), micros(offRes.P50)
		p99.Value, p99.Bare = micros(onRes.P99), micros(offRes.P99)
		p50.Sides, p99.Sides = []SideResult{onRes, offRes}, []SideResult{onRes, offRes}
		note := fmt.Sprintf("%d keep-alive connections, median of %d rounds; on: %.0f req/s, %s, %s; off: %.0f req/s, %s, %s", r.o.Concurrency, len(onRes.RoundRPS),
			onRes.RPS, onRes.Summary(), onRes.CPUNote(), offRes.RPS, offRes.Summary(), offRes.CPUNote())
		p50.Notes, p99.Notes = note, note
		if r.o.ProfileDir != "" {
			label := "ratelimit-" + strings.NewReplacer("/", "_", "{", "", "}", "", " ", "_").Replace(rateLimitPaths[i])
			if err := r.profileGateway(ctx, st, on, onSide, label); err != nil {
				r.problems = append(r.problems, fmt.Errorf("profile %s: %w", label, err))
			}
		}
		for _, res := range []SideResult{onRes, offRes} {
			if total := res.OK + res.Failures(); res.OK == 0 || float64(res.Failures()) > maxFailureFraction*float64(total) {
				p50.Err = fmt.Errorf("%d of %d requests failed: %s", res.Failures(), total, res.Summary())
				p99.Err = p50.Err
			}
		}
	}
}

// profileGateway runs one more load run of side, not counted, while it takes a CPU profile of g,
// written to the profile directory as gateway-LABEL.cpu.pb.gz.
func (r *runner) profileGateway(ctx context.Context, st *testenv.Stack, g *extraGateway, side Side, label string) error {
	if err := os.MkdirAll(r.o.ProfileDir, 0o755); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		time.Sleep(side.Load.Warmup)
		secs := max(1, int(side.Load.Duration/time.Second))
		errc <- fetchProfile(ctx, g.url, st.State.AdminToken, "profile", secs, filepath.Join(r.o.ProfileDir, "gateway-"+label+".cpu.pb.gz"))
	}()
	_, loadErr := RunLoad(ctx, side.Load)
	return errors.Join(<-errc, loadErr)
}

// stopGateway stops a gateway the benchmark started; an unclean stop is a problem of the run.
func (r *runner) stopGateway(g *extraGateway) {
	if err := g.proc.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		r.problems = append(r.problems, fmt.Errorf("stop %s: %w", g.url, err))
	}
}

// extraGateway is a gateway process the benchmark runs beside a stack's.
type extraGateway struct {
	url  string
	proc *spawn.Proc
}

// startGateway runs bin/gateway in front of the services of a split stack, with the stack's
// configuration changed by change, and waits until it is ready.
func (r *runner) startGateway(ctx context.Context, st *testenv.Stack, name string, change func(*config.Config)) (*extraGateway, error) {
	cfg := st.State.Config()
	found := 0
	for _, p := range st.State.Processes {
		switch p.Name {
		case "user":
			cfg.UserURL, found = p.URL, found+1
		case "scene":
			cfg.SceneURL, found = p.URL, found+1
		case "session":
			cfg.SessionURL, found = p.URL, found+1
		}
	}
	if found != 3 {
		return nil, errors.New("another gateway needs a split stack: the user, scene and session processes")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cfg.GatewayAddr = ln.Addr().String()
	_ = ln.Close()
	// Asset URLs in its answers name the stack's gateway, as a second replica's would.
	cfg.PublicURL = st.State.GatewayURL
	cfg.Pprof = r.o.ProfileDir != ""
	change(&cfg)
	cmd := exec.Command(filepath.Join(r.o.BinDir, "gateway"))
	cmd.Env = cfg.Environ()
	logPath := filepath.Join(r.dir, name+".log")
	proc, err := spawn.Run(cmd, spawn.Options{Name: name, LogPath: logPath, Group: true, DeathSignal: syscall.SIGKILL})
	if err != nil {
		return nil, err
	}
	g := &extraGateway{url: "http://" + cfg.GatewayAddr, proc: proc}
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := client.Get(g.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil || proc.Exited() {
			_ = proc.Stop(syscall.SIGTERM, 5*time.Second)
			return nil, fmt.Errorf("%s not ready; log:\n%s", name, testenv.LogTail(logPath, 20))
		}
	}
}
