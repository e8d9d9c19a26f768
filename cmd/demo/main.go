// Command demo is the demo host page: a tiny integrator's server on its own origin, so that the
// embeds run cross-origin exactly as they do on a customer's site. On start it provisions, through
// the operator API and the REST API, an account (plan pro), an integration with the viewer and
// editor capabilities, a demo customer and one sample scene (the README's hero: a column on a
// ground plane), and records the keys in its state file so a restart reuses them. It serves the
// page (GET /), which mounts a viewer and an editor with the JS SDK from the gateway, both open
// on the sample, and mints embed sessions for it (POST /session) on the server side: the secret
// key never reaches the browser.
//
//	bin/demo --stack .dev/stack.json           # against a running `make dev`
//	bin/demo --gateway http://127.0.0.1:8080   # admin token from SPLATHOST_ADMIN_TOKEN
//
// `make dev` starts it through the stack runner once the gateway is healthy.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/stackstate"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address of the demo host (port 0 picks a free one)")
	gateway := fs.String("gateway", "http://"+cfg.GatewayAddr, "the gateway's base URL as browsers reach it")
	stackFile := fs.String("stack", "", "a stack runner's state file (.dev/stack.json) to take the gateway URL and admin token from")
	stateFile := fs.String("state", ".dev/demo.json", "where the demo keeps its account, keys and sample scene between runs")
	customer := fs.String("customer", "demo-customer", "the external user id of the demo customer")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	adminToken := cfg.AdminToken
	if *stackFile != "" {
		var st stackstate.State
		raw, err := os.ReadFile(*stackFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("%s: %w", *stackFile, err)
		}
		*gateway, adminToken = st.GatewayURL, st.AdminToken
	}
	if adminToken == "" {
		return errors.New("no admin token: set SPLATHOST_ADMIN_TOKEN or pass --stack .dev/stack.json")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p := &provisioner{gateway: strings.TrimSuffix(*gateway, "/"), adminToken: adminToken, stateFile: *stateFile, customer: *customer, log: log}
	st, err := p.ensure()
	if err != nil {
		return fmt.Errorf("provision the demo tenant: %w", err)
	}
	srv, err := newServer(p.gateway, st)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	// Scripts (the stack runner, the browser tests) read this line to find a port-0 address.
	fmt.Printf("demo host ready at http://%s (gateway %s, sample scene %s)\n", ln.Addr(), p.gateway, st.SampleSplatID)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shutdown)
}
