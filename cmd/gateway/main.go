// Command gateway runs the public HTTP gateway in front of the user, scene and session services
// running as their own processes.
package main

import (
	"github.com/splathost/splathost/gateway"
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ratelimit"
	"github.com/splathost/splathost/internal/roomproto"
	"github.com/splathost/splathost/internal/routes"
	"github.com/splathost/splathost/internal/sessiontoken"
	"github.com/splathost/splathost/services/session"
	"github.com/splathost/splathost/web"
)

func main() {
	rt := boot.Init("gateway", true)
	defer rt.Close()
	cfg := rt.Config
	d := rt.DB()
	ints := credentials.NewCache(d.Pool, rt.Log)
	go ints.Listen(rt.Ctx)
	keys, err := sessiontoken.NewKeys(cfg.SessionKeys)
	if err != nil {
		boot.Fatal(rt.Log, "session keys", err)
	}
	limits := gateway.NewRateLimits(cfg.RateLimit)
	// Every replica draws its integrations' limits from the same buckets.
	limits.Share(rt.Ctx, ratelimit.NewPGBuckets(d.Pool), rt.Log)
	app, err := gateway.New(gateway.Options{
		Log: rt.Log, BodyLimit: cfg.BodyLimit, RequestBudget: cfg.RequestBudget, AdminToken: cfg.AdminToken, Pprof: cfg.Pprof,
		InternalSecret: []byte(cfg.InternalSecret), Integrations: ints,
		// Session bearers are verified here, with the integration cache, like every credential.
		Sessions:    session.NewVerifier(keys, ints),
		Assets:      web.Dist,
		Idempotency: idempotency.NewStore(d.Pool, rt.Log),
		RateLimits:  limits,
		Upstreams: []gateway.Upstream{
			{Name: "user", Prefixes: routes.User, URL: cfg.UserURL},
			{Name: "scene", Prefixes: routes.Scene, Public: routes.ScenePublic, URL: cfg.SceneURL},
			{Name: "session", Prefixes: routes.Session, Upgrade: []string{roomproto.Path}, URL: cfg.SessionURL},
		},
	})
	if err != nil {
		boot.Fatal(rt.Log, "gateway", err)
	}
	rt.Serve(app, cfg.GatewayAddr)
}
