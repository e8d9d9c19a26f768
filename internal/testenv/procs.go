package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/spawn"
	"github.com/splathost/splathost/internal/topology"
)

// SplitNames are the product binaries of a split deployment, in the order Split starts them.
var SplitNames = []string{"user", "scene", "session", "worker", "gateway"}

// Split is the product's split binaries (bin/gateway, user, scene, session, worker) run as
// separate processes against an existing stack's stores, each on its own loopback port. The
// fault tests kill one with SIGKILL, as a crash or an OOM kill would, and start it again on the
// same port, with no supervisor in between that could hide or change what the crash does.
type Split struct {
	// Config is what every child runs with (its ports and task queue included).
	Config config.Config
	// URL is the split gateway's base URL.
	URL string
	// URLs are every gateway's base URL, URL first (SplitOptions.Gateways): the way a test
	// reaches one stack through several gateway processes, as two browsers behind a load
	// balancer would (the multiplayer room's cross-process tests).
	URLs []string

	binDir, logDir string
	mu             sync.Mutex
	procs          map[string]*spawn.Proc
	// extra are processes beyond the first of their binary (AddWorker, the gateway and session
	// replicas), by name.
	extra map[string]replica
}

// replica is a process beyond the first of its binary: the binary, its configuration (its own
// listen address) and the address its /readyz answers on.
type replica struct {
	bin  string
	cfg  config.Config
	addr string
}

// SplitOptions says how to run a Split.
type SplitOptions struct {
	// Config is the stack's configuration; its listen addresses and service URLs are replaced
	// by free loopback ports.
	Config config.Config
	// BinDir holds the binaries; bin/ of the repository when empty.
	BinDir string
	// LogDir receives NAME.log for each child (appended to across restarts).
	LogDir string
	// TaskQueue, when set, is the task queue the children start workflows on and the worker
	// serves (TaskQueue-media for renditions, served by AddMediaWorker's processes): a split on a
	// shared stack gets its own, so killing its worker stalls only its own jobs, and the worker
	// leaves the stack's schedules alone.
	TaskQueue string
	// Replicas runs that many of each split binary (1 when zero), named user, user-2, …, every
	// gateway forwarding to every replica of each service in turn: a deployment scaled out
	// behind a load balancer (URLs lists the gateways). Media workers are still only those a
	// test adds.
	Replicas int
	// Gateways and Sessions are how many gateway and session service processes to run (1 when
	// zero), named gateway, gateway-2, … and session, session-2, …. Gateway i forwards to
	// session i (modulo Sessions) only; the user and scene services stay single. Not with
	// Replicas.
	Gateways, Sessions int
}

// freeAddr is a loopback address with a port nobody listens on right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// StartSplit starts every split binary and waits until each answers /readyz.
func StartSplit(o SplitOptions) (*Split, error) {
	if o.BinDir == "" {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		o.BinDir = filepath.Join(root, "bin")
	}
	c := o.Config
	addrs := make([]string, 5)
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	c.GatewayAddr, c.UserAddr, c.SceneAddr, c.SessionAddr, c.WorkerHealthAddr = addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]
	c.UserURL, c.SceneURL, c.SessionURL = "http://"+c.UserAddr, "http://"+c.SceneAddr, "http://"+c.SessionAddr
	if o.TaskQueue != "" {
		c.TaskQueue, c.WorkerSchedules = o.TaskQueue, false
		c.MediaTaskQueue = o.TaskQueue + "-media"
	}
	first, procs, err := topology.Plan(c, topology.Options{Replicas: o.Replicas, Gateways: o.Gateways, Sessions: o.Sessions}, freeAddr)
	if err != nil {
		return nil, err
	}
	s := &Split{Config: first, URL: "http://" + c.GatewayAddr, URLs: []string{"http://" + c.GatewayAddr}, binDir: o.BinDir,
		logDir: o.LogDir, procs: map[string]*spawn.Proc{}, extra: map[string]replica{}}
	for _, p := range procs {
		s.extra[p.Name] = replica{bin: p.Bin, cfg: p.Config, addr: p.Addr}
		if p.Bin == topology.Gateway {
			s.URLs = append(s.URLs, "http://"+p.Addr)
		}
	}
	names := s.names()
	for _, n := range names {
		if err := s.spawn(n); err != nil {
			s.Stop()
			return nil, err
		}
	}
	for _, n := range names {
		if err := s.waitReady(n, time.Minute); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// AddWorker starts one more worker process, named name (its log is NAME.log), as a second
// replica would run in production: it polls the same task queue and runs its own view streamer,
// which competes for the streamer's advisory lock.
func (s *Split) AddWorker(name string) error {
	return s.addReplica(name, "worker", func(c *config.Config, addr string) { c.WorkerHealthAddr = addr })
}

// AddMediaWorker starts a media worker (bin/media-worker) named name, polling the split's media
// task queue; a split runs none until a test adds one.
func (s *Split) AddMediaWorker(name string) error {
	return s.addReplica(name, "media-worker", func(c *config.Config, addr string) { c.MediaHealthAddr = addr })
}

// addReplica starts bin as the extra child name, its health server on a free port that listen
// writes into its configuration.
func (s *Split) addReplica(name, bin string, listen func(*config.Config, string)) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	cfg := s.Config
	listen(&cfg, addr)
	s.mu.Lock()
	s.extra[name] = replica{bin: bin, cfg: cfg, addr: addr}
	s.mu.Unlock()
	if err := s.spawn(name); err != nil {
		return err
	}
	return s.waitReady(name, time.Minute)
}

// names are every child, the replicas and extra workers (sorted) after the split binaries.
func (s *Split) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	extra := make([]string, 0, len(s.extra))
	for n := range s.extra {
		extra = append(extra, n)
	}
	slices.Sort(extra)
	return append(append([]string(nil), SplitNames...), extra...)
}

// healthAddr is where the named child answers /readyz.
func (s *Split) healthAddr(name string) string {
	s.mu.Lock()
	r, extra := s.extra[name]
	s.mu.Unlock()
	if extra {
		return r.addr
	}
	switch name {
	case "gateway":
		return s.Config.GatewayAddr
	case "user":
		return s.Config.UserAddr
	case "scene":
		return s.Config.SceneAddr
	case "session":
		return s.Config.SessionAddr
	default:
		return s.Config.WorkerHealthAddr
	}
}

// ServiceURL is the named child's own base URL (its private port).
func (s *Split) ServiceURL(name string) string { return "http://" + s.healthAddr(name) }

func (s *Split) spawn(name string) error {
	bin, cfg := name, s.Config
	if addr := s.healthAddr(name); name != "worker" && addr == s.Config.WorkerHealthAddr {
		// Not a split binary nor an extra worker: healthAddr's default.
		return fmt.Errorf("unknown process %s", name)
	}
	s.mu.Lock()
	if r, ok := s.extra[name]; ok {
		bin, cfg = r.bin, r.cfg
	}
	s.mu.Unlock()
	cmd := exec.Command(filepath.Join(s.binDir, bin))
	cmd.Env = cfg.Environ()
	// In the test's process group: a test binary that dies takes its children with it.
	p, err := spawn.Run(cmd, spawn.Options{Name: name, LogPath: filepath.Join(s.logDir, name+".log"), DeathSignal: syscall.SIGKILL})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.procs[name] = p
	s.mu.Unlock()
	return nil
}

func (s *Split) proc(name string) *spawn.Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[name]
}

// waitReady polls the child's /readyz until it answers 200.
func (s *Split) waitReady(name string, timeout time.Duration) error {
	p := s.proc(name)
	url := "http://" + s.healthAddr(name) + "/readyz"
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited during start-up; log:\n%s", name, LogTail(filepath.Join(s.logDir, name+".log"), 20))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %s; log:\n%s", name, timeout, LogTail(filepath.Join(s.logDir, name+".log"), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PID is the named child's process id (0 when it is not running).
func (s *Split) PID(name string) int {
	p := s.proc(name)
	if p == nil {
		return 0
	}
	if p.Exited() {
		return 0
	}
	return p.Pid()
}

// Kill sends the named child SIGKILL and waits until it is gone: no shutdown hook runs, open
// requests and transactions die with it.
func (s *Split) Kill(name string) error {
	p := s.proc(name)
	if p == nil {
		return fmt.Errorf("no process %s", name)
	}
	p.Kill()
	return nil
}

// Start starts the named child again (after Kill or Term) on the same port and waits until it
// is ready.
func (s *Split) Start(name string) error {
	if p := s.proc(name); p != nil && !p.Exited() {
		return fmt.Errorf("%s is still running", name)
	}
	if err := s.spawn(name); err != nil {
		return err
	}
	return s.waitReady(name, time.Minute)
}

// Term asks the named child to stop (SIGTERM, a graceful shutdown as an orchestrator's rolling
// update does) and waits up to timeout before it kills it.
func (s *Split) Term(name string, timeout time.Duration) error {
	p := s.proc(name)
	if p == nil {
		return fmt.Errorf("no process %s", name)
	}
	return p.Stop(syscall.SIGTERM, timeout)
}

// Stop kills every child and waits for them.
func (s *Split) Stop() {
	for _, n := range s.names() {
		if p := s.proc(n); p != nil {
			p.Kill()
		}
	}
}
