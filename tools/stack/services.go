package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splathost/splathost/internal/config"
)

// Service modes for Options.Services.
const (
	// ServicesSplit runs the gateway, user, scene, session and worker binaries.
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
}

// serviceDefs lists the binaries of a services mode, in start order.
func serviceDefs(mode string, cfg config.Config) ([]serviceDef, error) {
	switch mode {
	case ServicesSplit:
		return []serviceDef{
			{"user", cfg.UserAddr},
			{"scene", cfg.SceneAddr},
			{"session", cfg.SessionAddr},
			{"worker", cfg.WorkerHealthAddr},
			{"gateway", cfg.GatewayAddr},
		}, nil
	case ServicesAllInOne:
		return []serviceDef{{"splathost", cfg.GatewayAddr}}, nil
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

// startServices launches every binary of the mode, then waits until each answers /readyz. They
// start together: none depends on another being ready (the gateway retries its upstreams).
func startServices(ctx context.Context, mode, binDir, logDir string, cfg config.Config, timeout time.Duration) ([]*service, error) {
	defs, err := serviceDefs(mode, cfg)
	if err != nil {
		return nil, err
	}
	if err := checkServiceBinaries(mode, binDir); err != nil {
		return nil, err
	}
	env := cfg.Environ()
	var started []*service
	for _, d := range defs {
		p, err := startProcess(procSpec{
			name:    d.name,
			path:    filepath.Join(binDir, d.name),
			env:     env,
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
