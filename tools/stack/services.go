package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/topology"
)

// Service modes for Options.Services.
const (
	// ServicesSplit runs the gateway, user, scene, session, worker and media-worker binaries.
	ServicesSplit = "split"
	// ServicesAllInOne runs the single splathost binary.
	ServicesAllInOne = "allinone"
	// ServicesNone starts the infrastructure only, for the integration-test harness, which runs
	// the product in its own test processes.
	ServicesNone = "none"
)

// serviceDef is one product binary and the address its /readyz answers on.
type serviceDef struct {
	name      string
	readyAddr string
	// bin is the binary when it is not name (a replica: gateway-2 runs gateway); cfg, when set,
	// is the replica's own configuration (its listen address, its upstream).
	bin string
	cfg *config.Config
}

// binary is the def's binary name.
func (d serviceDef) binary() string {
	if d.bin != "" {
		return d.bin
	}
	return d.name
}

// replicaDefs are the processes beyond the first of their binary (topology.Plan): with
// Options.Replicas, that many of every binary, each gateway forwarding to every replica of each
// service; with Options.Gateways and Options.Sessions, gateway i forwarding to session i (modulo
// the sessions), which is what the multiplayer room's cross-process promise is about: try it
// with two browsers. The replicas listen on free loopback ports. It returns the configuration the
// first processes run with (the gateway's upstreams naming every replica).
func replicaDefs(cfg config.Config, o topology.Options) (config.Config, []serviceDef, error) {
	o.MediaWorker = true
	first, procs, err := topology.Plan(cfg, o, freeLoopback)
	if err != nil {
		return cfg, nil, err
	}
	defs := make([]serviceDef, len(procs))
	for i, p := range procs {
		defs[i] = serviceDef{name: p.Name, readyAddr: p.Addr, bin: p.Bin, cfg: &p.Config}
	}
	return first, defs, nil
}

// freeLoopback is a loopback address nobody listens on right now.
func freeLoopback() (string, error) {
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// serviceDefs lists the binaries of a services mode, in start order.
func serviceDefs(mode string, cfg config.Config) ([]serviceDef, error) {
	switch mode {
	case ServicesSplit:
		return []serviceDef{
			{name: "user", readyAddr: cfg.UserAddr},
			{name: "scene", readyAddr: cfg.SceneAddr},
			{name: "session", readyAddr: cfg.SessionAddr},
			{name: "worker", readyAddr: cfg.WorkerHealthAddr},
			{name: "media-worker", readyAddr: cfg.MediaHealthAddr},
			{name: "gateway", readyAddr: cfg.GatewayAddr},
		}, nil
	case ServicesAllInOne:
		return []serviceDef{{name: "splathost", readyAddr: cfg.GatewayAddr}}, nil
	case ServicesNone:
		return nil, nil
	default:
		return nil, fmt.Errorf("unknown services mode %q (want %s, %s or %s)", mode, ServicesSplit, ServicesAllInOne, ServicesNone)
	}
}

// service is a running product binary.
type service struct {
	def  serviceDef
	proc *process
}

// checkServiceBinaries reports missing product binaries before anything starts.
func checkServiceBinaries(mode, binDir string) error {
	defs, err := serviceDefs(mode, config.Config{})
	if err != nil {
		return err
	}
	var missing []string
	for _, d := range defs {
		path := filepath.Join(binDir, d.name)
		if st, err := os.Stat(path); err != nil || st.IsDir() {
			missing = append(missing, path)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("services: %s not found: build the binaries first (make build), or pass --bin or --services none", strings.Join(missing, ", "))
	}
	return nil
}

// startServices launches every binary of the mode, plus the replicas, then waits until each
// answers /readyz. They start together: none depends on another being ready (the gateway
// retries its upstreams).
func startServices(ctx context.Context, mode, binDir, logDir string, cfg config.Config, replicas []serviceDef,
	timeout time.Duration) ([]*service, error) {
	defs, err := serviceDefs(mode, cfg)
	if err != nil {
		return nil, err
	}
	defs = append(defs, replicas...)
	if err := checkServiceBinaries(mode, binDir); err != nil {
		return nil, err
	}
	env := cfg.Environ()
	var started []*service
	for _, d := range defs {
		denv := env
		if d.cfg != nil {
			denv = d.cfg.Environ()
		}
		p, err := startProcess(procSpec{
			name:    d.name,
			path:    filepath.Join(binDir, d.binary()),
			env:     denv,
			logPath: filepath.Join(logDir, d.name+".log"),
		})
		if err != nil {
			return started, err
		}
		started = append(started, &service{def: d, proc: p})
	}
	for _, s := range started {
		err := waitHealthy(ctx, s.def.name, s.proc, s.proc.spec.logPath, timeout, httpCheck("http://"+s.def.readyAddr+"/readyz", ""))
		if err != nil {
			return started, err
		}
	}
	return started, nil
}

// demoBinary is the demo host page's binary in BinDir.
const demoBinary = "demo"

// checkDemoBinary reports a missing demo binary before anything starts, when Demo is on.
func (s *Stack) checkDemoBinary() error {
	if !s.opts.Demo {
		return nil
	}
	path := filepath.Join(s.opts.BinDir, demoBinary)
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return fmt.Errorf("demo: %s not found: build the binaries first (make build)", path)
	}
	return nil
}

// startDemo runs the demo host against the running gateway and waits for it: it provisions its
// tenant through the gateway on start, so it comes after the services. Its state (keys, sample
// scene) lives beside the stack's data, so a warm restart reuses it.
func (s *Stack) startDemo(ctx context.Context) (*service, error) {
	def := serviceDef{name: demoBinary, readyAddr: hostPort(s.opts.Ports.Demo)}
	p, err := startProcess(procSpec{
		name: def.name,
		path: filepath.Join(s.opts.BinDir, demoBinary),
		args: []string{"--addr", def.readyAddr, "--gateway", httpURL(s.opts.Ports.Gateway),
			"--state", filepath.Join(s.opts.Dir, "demo.json")},
		env:     s.cfg.Environ(), // SPLATHOST_ADMIN_TOKEN: the demo uses the operator API
		logPath: filepath.Join(s.logDir, def.name+".log"),
	})
	if err != nil {
		return nil, err
	}
	svc := &service{def: def, proc: p}
	return svc, waitHealthy(ctx, def.name, p, p.spec.logPath, s.opts.StartTimeout, httpCheck("http://"+def.readyAddr+"/readyz", ""))
}
