package main

import (
	"fmt"
	"log/slog"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	splathostconfig "github.com/splathost/splathost/internal/config"
)

// frontendsScheme is the gRPC resolver scheme of the UI's frontend list: the UI server dials
// one target, so a list of frontends becomes one target whose addresses gRPC fails over
// between (pick_first), and the UI outlives the loss of one frontend.
const frontendsScheme = "splathost-frontends"

// uiTarget is the gRPC target the UI dials for a comma list of frontend addresses: the
// address itself when there is one, else a target of a resolver registered here.
func uiTarget(frontends string) (string, error) {
	addrs := splathostconfig.List(frontends)
	switch len(addrs) {
	case 0:
		return "", fmt.Errorf("--ui-frontends: no address")
	case 1:
		return addrs[0], nil
	}
	r := manual.NewBuilderWithScheme(frontendsScheme)
	state := resolver.State{}
	for _, a := range addrs {
		state.Addresses = append(state.Addresses, resolver.Address{Addr: a})
	}
	r.InitialState(state)
	resolver.Register(r)
	return frontendsScheme + ":///frontends", nil
}

// startUI serves the Temporal web UI on port until the returned server is stopped.
func startUI(port int, frontends, namespace string, logger *slog.Logger) (*uiserver.Server, error) {
	target, err := uiTarget(frontends)
	if err != nil {
		return nil, err
	}
	ui := uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                loopback,
		Port:                port,
		TemporalGRPCAddress: target,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true, // no outbound calls from a dev stack
	}))
	go func() {
		// Start blocks until Stop. The runner's free-port check before start-up is what keeps
		// its log.Fatal on a busy port from ever running.
		if err := ui.Start(); err != nil {
			logger.Error("ui server stopped", "error", err)
		}
	}()
	return ui, nil
}
