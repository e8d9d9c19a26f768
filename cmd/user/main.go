// Command user runs the user service (operator API, external users) behind a split gateway.
package main

import (
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/routes"
	"github.com/splathost/splathost/internal/webhookstart"
	"github.com/splathost/splathost/services/user"
)

func main() {
	rt := boot.Init("user", true)
	defer rt.Close()
	d := rt.DB()
	// A customer deletion starts the purge of its assets right after the commit; the client is
	// lazy, so Temporal being down does not stop this service (the worker re-drives the purge).
	tc := rt.Temporal()
	// Gateways in other processes drop their cached integrations on the NOTIFY.
	svc := user.New(d, rt.Log, nil, user.Temporal{Client: tc, TaskQueue: rt.Config.TaskQueue})
	hooks, err := webhookstart.Registry(tc, rt.Config, d.Ent, rt.Log)
	if err != nil {
		boot.Fatal(rt.Log, "webhooks", err)
	}
	svc.UseWebhooks(hooks)
	app := boot.ServiceApp("user", rt.Config, rt.Log, routes.User, svc.Register,
		map[string]httpx.Check{"postgres": d.Ping})
	rt.Serve(app, rt.Config.UserAddr)
}
