package boot

import (
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/resident"
)

// Serve is every HTTP binary's last step: it logs the listen address, serves app on addr until
// the shutdown signal and drains it within the configured shutdown timeout. A failure to listen
// or serve is logged; the binary then returns from main and its deferred closes run.
func (r *Runtime) Serve(app *fiber.App, addr string) {
	r.Log.Info("listening", "addr", addr)
	// An idle process gives back what its boot left resident (package resident).
	defer resident.AfterStart()()
	if err := Serve(r.Ctx, app, addr, r.Config.ShutdownTimeout); err != nil {
		r.Log.Error("serve", "error", err)
	}
}

// ServeHealth starts, in the background, the health server of a binary that serves no API (the
// workers): /healthz and /readyz over checks (with details' reports beside them), and the metrics (and pprof, when configured)
// behind the admin token (httpx.MetricsGuard). A
// health server that cannot listen or serve ends the process: an orchestrator would otherwise
// see a live worker as dead.
func (r *Runtime) ServeHealth(addr string, checks map[string]httpx.Check, details map[string]httpx.Detail) {
	health := httpx.NewApp(r.component, r.Log, 4096, 0)
	httpx.MountHealthDetails(health, r.Log, checks, details)
	httpx.MountMetrics(health, httpx.MetricsGuard(r.Config.AdminToken, []byte(r.Config.InternalSecret)), r.Config.Pprof)
	go func() {
		if err := Serve(r.Ctx, health, addr, r.Config.ShutdownTimeout); err != nil {
			Fatal(r.Log, "health server", err)
		}
	}()
}
