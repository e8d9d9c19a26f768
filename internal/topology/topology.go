// Package topology plans the processes of a split deployment on one machine: how many of each
// product binary, on which loopback addresses, and which service replicas each gateway forwards
// to. The dev stack runner (tools/stack) and the test harness's Split (internal/testenv) both
// start what it plans, so `make dev` and the tests run the same shape.
package topology

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/splathost/splathost/internal/config"
)

// Binaries of a split deployment that can run as replicas, in start order: the services, the
// workers, then the gateway.
const (
	User        = "user"
	Scene       = "scene"
	Session     = "session"
	Worker      = "worker"
	MediaWorker = "media-worker"
	Gateway     = "gateway"
)

// Options says how many processes to plan.
type Options struct {
	// Replicas is how many processes of each binary to run (1 when zero): replica i of a binary
	// is named BIN-i, and every gateway forwards to every replica of each service, in turn.
	Replicas int
	// Gateways and Sessions pin a topology instead, for the multiplayer room's cross-process
	// tests: that many gateway and session processes, gateway i forwarding to session i (modulo
	// Sessions) only, so two clients on two gateways are known to be on two session processes.
	// They cannot be combined with Replicas.
	Gateways, Sessions int
	// MediaWorker also replicates the media worker (Replicas only): the test harness's Split
	// starts none unless a test adds one.
	MediaWorker bool
}

// Proc is one process beyond the first of its binary.
type Proc struct {
	// Name is BIN-i (i from 2); Bin is the binary.
	Name, Bin string
	// Addr is where it listens and its /readyz answers.
	Addr string
	// Config is what it runs with: the first process's configuration with its own listen address
	// (and, for a gateway, its upstreams).
	Config config.Config
}

// Plan returns the configuration the first process of every binary runs with (base with the
// gateway's upstreams extended to every replica) and the extra processes, each on an address
// from free. base holds the first processes' listen addresses and service URLs.
func Plan(base config.Config, o Options, free func() (string, error)) (config.Config, []Proc, error) {
	if o.Replicas > 1 && (o.Gateways > 1 || o.Sessions > 1) {
		return base, nil, fmt.Errorf("replicas (%d) and pinned gateways/sessions (%d/%d) cannot be combined", o.Replicas, o.Gateways, o.Sessions)
	}
	if o.Replicas > 1 {
		return replicate(base, o.Replicas, o.MediaWorker, free)
	}
	return pin(base, max(o.Gateways, 1), max(o.Sessions, 1), free)
}

// listen is the listen address field of each replicable binary.
var listen = map[string]func(*config.Config) *string{
	User:        func(c *config.Config) *string { return &c.UserAddr },
	Scene:       func(c *config.Config) *string { return &c.SceneAddr },
	Session:     func(c *config.Config) *string { return &c.SessionAddr },
	Worker:      func(c *config.Config) *string { return &c.WorkerHealthAddr },
	MediaWorker: func(c *config.Config) *string { return &c.MediaHealthAddr },
	Gateway:     func(c *config.Config) *string { return &c.GatewayAddr },
}

// upstream is the gateway's URL setting of each service.
var upstream = map[string]func(*config.Config) *string{
	User:    func(c *config.Config) *string { return &c.UserURL },
	Scene:   func(c *config.Config) *string { return &c.SceneURL },
	Session: func(c *config.Config) *string { return &c.SessionURL },
}

// extras are the replicas 2 to n of bin (the first is the base process), each on an address
// from free and otherwise configured as base.
func extras(base config.Config, bin string, n int, free func() (string, error)) ([]Proc, error) {
	var procs []Proc
	for i := 2; i <= n; i++ {
		addr, err := free()
		if err != nil {
			return nil, err
		}
		c := base
		*listen[bin](&c) = addr
		procs = append(procs, Proc{Name: bin + "-" + strconv.Itoa(i), Bin: bin, Addr: addr, Config: c})
	}
	return procs, nil
}

// replicate plans n of each binary, every gateway on every service replica.
func replicate(base config.Config, n int, media bool, free func() (string, error)) (config.Config, []Proc, error) {
	bins := []string{User, Scene, Session, Worker}
	if media {
		bins = append(bins, MediaWorker)
	}
	var procs []Proc
	urls := map[string][]string{}
	for svc, field := range upstream {
		urls[svc] = []string{*field(&base)}
	}
	for _, bin := range bins {
		replicas, err := extras(base, bin, n, free)
		if err != nil {
			return base, nil, err
		}
		procs = append(procs, replicas...)
		if _, ok := upstream[bin]; ok {
			urls[bin] = append(urls[bin], addrURLs(replicas)...)
		}
	}
	for svc, field := range upstream {
		*field(&base) = strings.Join(urls[svc], ",")
	}
	for i := range procs {
		for _, field := range upstream {
			*field(&procs[i].Config) = *field(&base)
		}
	}
	gateways, err := extras(base, Gateway, n, free)
	if err != nil {
		return base, nil, err
	}
	return base, append(procs, gateways...), nil
}

// pin plans sessions session processes and gateways gateway processes, gateway i forwarding to
// session i (modulo sessions).
func pin(base config.Config, gateways, sessions int, free func() (string, error)) (config.Config, []Proc, error) {
	sessionProcs, err := extras(base, Session, sessions, free)
	if err != nil {
		return base, nil, err
	}
	sessionURLs := append([]string{base.SessionURL}, addrURLs(sessionProcs)...)
	gatewayProcs, err := extras(base, Gateway, gateways, free)
	if err != nil {
		return base, nil, err
	}
	// Gateway i (from 2; gatewayProcs[i-2]) forwards to session i, modulo sessions.
	for j := range gatewayProcs {
		gatewayProcs[j].Config.SessionURL = sessionURLs[(j+1)%len(sessionURLs)]
	}
	return base, append(sessionProcs, gatewayProcs...), nil
}

// addrURLs are the HTTP base URLs of procs.
func addrURLs(procs []Proc) []string {
	urls := make([]string, len(procs))
	for i, p := range procs {
		urls[i] = "http://" + p.Addr
	}
	return urls
}
