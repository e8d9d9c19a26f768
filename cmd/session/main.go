// Command session runs the session service (embed sessions, embed API and pages) behind a
// split gateway.
package main

import (
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/routes"
	"github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/internal/sessiontoken"
	"github.com/splathost/splathost/services/session"
)

func main() {
	rt := boot.Init("session", true)
	defer rt.Close()
	d := rt.DB()
	keys, err := sessiontoken.NewKeys(rt.Config.SessionKeys)
	if err != nil {
		boot.Fatal(rt.Log, "session keys", err)
	}
	svc := session.New(d, rt.Log, keys)
	svc.UseAssetURLs(scenes.NewAssetURLs(rt.Config))
	svc.UseBeaconLimits(rt.Config.RateLimit)
	// The multiplayer rooms run until the shutdown signal, then close their WebSockets (1012)
	// and delete this process's presence rows: the database must outlive them (rt.Close).
	rooms := svc.Rooms()
	// The rooms check their participants' integration and customer again while their sockets
	// are open, from this process's own credential cache, which hears every revocation and
	// customer status change on credentials.Channel.
	ints := credentials.NewCache(d.Pool, rt.Log)
	go ints.Listen(rt.Ctx)
	rooms.UseIntegrations(ints)
	roomsDone := make(chan struct{})
	go func() { defer close(roomsDone); rooms.Run(rt.Ctx) }()
	app := boot.ServiceApp("session", rt.Config, rt.Log, routes.Session, svc.Register,
		map[string]httpx.Check{"postgres": d.Ping, "room": rooms.Ready})
	rt.Serve(app, rt.Config.SessionAddr)
	<-roomsDone
}
