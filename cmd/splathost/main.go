// Command splathost runs the whole product in one process: the gateway with the user, scene and
// session services mounted in-process, and the Temporal worker. `splathost migrate` applies the
// Postgres migrations and the ClickHouse schema, then exits.
package main

import (
	"os"

	"github.com/splathost/splathost/internal/allinone"
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/migrate"
)

func main() {
	migrating := len(os.Args) > 1 && os.Args[1] == "migrate"
	if len(os.Args) > 1 && !migrating {
		os.Stderr.WriteString("usage: splathost [migrate]\n")
		os.Exit(2)
	}
	rt := boot.Init("splathost", !migrating)
	defer rt.Close()
	if migrating {
		if err := migrate.Run(rt.Ctx, rt.Config, rt.Log); err != nil {
			boot.Fatal(rt.Log, "migrate", err)
		}
		return
	}
	p, err := allinone.Start(rt.Ctx, rt.Config, rt.Log)
	if err != nil {
		boot.Fatal(rt.Log, "start", err)
	}
	defer p.Close()
	rt.Serve(p.App, rt.Config.GatewayAddr)
}
